"""The gallery of wrong sinks: proof that every checker can fail (docs/certification.md).

Jepsen validates its checkers against histories known to be bad; restproof runs known-bad sinks
(``scenarios/gallery/``, in Python, Node.js and shell) through the real matrix rows and requires each to
FAIL where its class of bug must be caught, with the named checker among the reasons, and runs
correct sinks written outside the project (other batching, other languages) that must PASS. Each
sink runs alone as the certified sink of its rows; nothing is compared with the reference sink.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from certification.documents import DocumentError, load_yaml
from certification.lanes import FamilyFactory, LanePlan, PlanItem, run_lanes
from certification.scenarios import Row
from certification.sinks import SinkSpec, load_sink
from certification.verdicts import FAIL, PASS, RowOutcome

GALLERY = Path(__file__).resolve().parents[1] / "scenarios" / "gallery" / "gallery.yaml"
GALLERY_RUN_TIMEOUT_S = 45.0


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MustFail(_Closed):
    row: str
    checker: str = Field(pattern=r"^[a-z_]+$")


class Entry(_Closed):
    sink: str
    description: str = Field(alias="class", max_length=300)
    must_fail: tuple[MustFail, ...] = ()
    must_pass: tuple[str, ...] = ()


class Manifest(_Closed):
    schema_id: str = Field(pattern=r"^restproof\.checker_gallery\.v1$")
    entries: tuple[Entry, ...] = Field(min_length=1)


class GalleryError(ValueError):
    """A gallery manifest the harness refuses (invalid input: exit 2)."""


@dataclass(frozen=True, slots=True)
class Expectation:
    sink: SinkSpec
    row: Row
    must: str
    """``fail`` or ``pass``."""
    checker: str | None


@dataclass(frozen=True, slots=True)
class Finding:
    expectation: Expectation
    verdict: str
    reasons: tuple[str, ...]

    @property
    def held(self) -> bool:
        if self.expectation.must == "pass":
            return self.verdict == PASS
        prefix = f"{self.expectation.checker}:"
        return self.verdict == FAIL and any(reason.startswith(prefix) for reason in self.reasons)


def load_gallery(path: Path, rows: Sequence[Row]) -> list[Expectation]:
    try:
        manifest = Manifest.model_validate(load_yaml(path))
    except DocumentError as exc:
        raise GalleryError(str(exc)) from None
    except ValidationError as exc:
        raise GalleryError(f"{path}: not a gallery manifest ({exc.error_count()} problem(s))") from None
    by_id = {row.row_id: row for row in rows}
    expectations: list[Expectation] = []
    for entry in manifest.entries:
        sink = load_sink((path.parent / entry.sink).resolve())
        wanted = [(item.row, "fail", item.checker) for item in entry.must_fail] + \
            [(row_id, "pass", None) for row_id in entry.must_pass]
        for row_id, must, checker in wanted:
            if row_id not in by_id:
                raise GalleryError(f"{path}: {sink.name} names row {row_id}, which no catalog has")
            expectations.append(Expectation(sink, by_id[row_id], must, checker))
    return expectations


def run_gallery(expectations: Sequence[Expectation], factory: FamilyFactory, work_root: Path, *, seed: int,
                lanes: int, progress: Callable[[str], None]) -> list[Finding]:
    """Every expectation's sink on its row, as the certified sink, grouped by catalog for the lanes."""
    order = sorted(range(len(expectations)), key=lambda index: str(expectations[index].row.catalog))
    items = [PlanItem(expectations[index].row, ((expectations[index].sink, "certified"),)) for index in order]
    outcomes: list[RowOutcome] = run_lanes(LanePlan(items, work_root, seed, lanes, GALLERY_RUN_TIMEOUT_S),
                                           factory, progress)
    findings: list[Finding | None] = [None] * len(expectations)
    for index, outcome in zip(order, outcomes, strict=True):
        result = outcome.results[0]
        findings[index] = Finding(expectations[index], result.verdict, result.reasons)
    return [finding for finding in findings if finding is not None]
