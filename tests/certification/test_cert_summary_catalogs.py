"""The read-only-summary catalogs (``scenarios/matrix/sync-<personality>-summary.yaml``, issue 23): each runs
on its own receiver with its personality's bundled profile plus json-batches' read-only summary, one child
in flight, every summary crash point and the verification write under the personality's prefix, and
together they cover every summary and verification crash cell of the five personalities on both journals."""

from __future__ import annotations

from pathlib import Path

import pytest

from certification.coverage import coverage, fault_space, row_cells
from certification.documents import load_yaml
from certification.scenarios import BUNDLED, bundled_rows, failpoints_of, load_catalog
from sink.compiler import load_document
from sink.contracts.profile import OperationProfile

PROFILES = BUNDLED.parent / "profiles"
# personality: (row prefix, bundled profile)
PERSONALITIES = {"stripe-like": ("stripe", "mock.stripe-like@1"),
                 "ietf-idempotency-draft": ("ietf", "mock.ietf-idempotency-draft@2"),
                 "aip-155-request-id": ("aip155", "mock.aip-155-request-id@2"),
                 "fingerprint-ledger": ("fingerprint", "mock.fingerprint-ledger@1"),
                 "bare-409": ("bare409", "mock.bare-409@1")}
POINTS = (*failpoints_of(("summary",), "sync_batch"), "journal.record_verification.before",
          "journal.record_verification.after")
REFERENCE = load_document(PROFILES / "mock.json-batches@1.yaml", OperationProfile)


def _profile(ref: str) -> OperationProfile:
    return load_document(PROFILES / f"{ref}.yaml", OperationProfile)


@pytest.mark.parametrize("personality", sorted(PERSONALITIES))
def test_a_summary_catalog_runs_its_bundled_profile_plus_the_summary(personality: str) -> None:
    prefix, bundled_ref = PERSONALITIES[personality]
    rows = load_catalog(BUNDLED / f"sync-{personality}-summary.yaml")
    assert [row.row_id for row in rows] == [f"sync.{prefix}.failpoint.{point}" for point in POINTS]
    assert {row.contract.name for row in rows if row.contract is not None} == {personality}
    assert all(row.expect.end == ("recovery",) for row in rows)
    crash = load_catalog(BUNDLED / f"sync-{personality}-crash.yaml")[0]
    assert (rows[0].scope_from, rows[0].scope_to) == (crash.scope_from, crash.scope_to)  # one child in flight
    ref = load_yaml(rows[0].workload)["sink"]["operation_profile_ref"]
    assert ref == f"mock.{personality}-summary@1"
    variant, bundled = _profile(ref), _profile(bundled_ref)
    # The bundled profile has no summary (so the bundled catalogs never reach these points); the variant
    # is that profile with json-batches' summary and nothing else changed.
    assert bundled.verification is None or bundled.verification.summary is None
    assert variant.verification == REFERENCE.verification
    assert variant.model_dump(exclude={"id", "version", "description", "verification"}) == bundled.model_dump(
        exclude={"id", "version", "description", "verification"})


@pytest.mark.parametrize("journal", ["sqlite", "postgres"])
def test_the_summary_and_verification_crash_cells_of_every_personality_are_covered(journal: str) -> None:
    wanted = {cell for cell in fault_space() if cell.journal == journal and cell.family == "sync_batch"
              and cell.dimension == "crash_point" and cell.personality in PERSONALITIES and cell.key[0] in POINTS}
    assert len(wanted) == len(PERSONALITIES) * len(POINTS)
    covered = {cell for row in bundled_rows() for cell in row_cells(row, journal)}
    assert wanted <= covered, sorted(cell.name() for cell in wanted - covered)[:5]
    assert coverage(bundled_rows(), journal).unexplained_count == 0


def test_the_summary_catalogs_are_where_the_docs_say() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "certification.md").read_text(encoding="utf-8")
    assert all(f"sync-{personality}-summary" in docs for personality in PERSONALITIES)
