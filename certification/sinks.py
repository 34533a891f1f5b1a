"""Sinks under test: the small adapter contract every sink meets (docs/certification.md).

A sink is a command. The harness starts it with the receiver URL (through the wire tap and the
fault proxy), the dataset (a workload file, and for sinks that want them the reference sink's
exported requests), a state directory and a worker id, and reads its exit code and, optionally, a
JSON result on stdout. ``recover`` is what an orchestrator runs after a crash or a failed run, as
another host. ``operator`` (optional) is run once per child the sink reports blocked with an
unknown effect. A sink's ``role`` is explicit: ``certified`` (judged strictly; the first ``--sink`` of
a run is the certified one) or ``baseline`` (a known-bad sink the faults must catch): never a name.

Every process starts through a tiny launcher that reports its pid and waits for a go signal before
``exec``-ing the sink, so a fault that must kill *that* process is armed before its first byte. The
harness does not reap a process before ``before_reap`` has run, so while a kill rule naming its pid is
armed that pid cannot belong to anyone else (a zombie keeps it); the hook disarms the rule. A sink
that declares ``warm_start`` runs its console script as a fork of a process that imported it once
(certification.warm_start), under the same go signal and the same reaping rule.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from certification.dataset import day_range
from certification.documents import DocumentError, load_yaml, loads_json
from certification.launchers import Invocation as Invocation  # noqa: PLC0414 - re-exported: callers import it here
from certification.launchers import SinkProcess, start
from certification.warm_start import WarmEntry, WarmProcess

SINK_SCHEMA = "restproof.sink_under_test.v2"
BUNDLED = Path(__file__).resolve().parents[1] / "scenarios" / "sinks"
RUN_TIMEOUT_S = 120.0
MAX_RESULT_BYTES = 4 * 1024 * 1024
MAX_CLAIMED_DAYS = 36_600
"""Days a result may name in all (a century): more is no delivery's scope, and the bound keeps a hostile
result (``0001-01-01`` to ``9999-12-31``, many times) from costing the harness minutes and gigabytes."""
Role = Literal["certified", "baseline"]
SPREAD_PLACEHOLDERS: dict[str, tuple[str, ...]] = {"journal_args": ()}
"""Placeholders that stand for a whole argument and expand to zero or more arguments, with their
value when the harness gives none: ``{journal_args}`` is ``--journal DSN`` on a PostgreSQL run
(``certify run --journal``) and nothing otherwise (the sink's embedded SQLite journal)."""


class WarmStart(BaseModel):
    """A Python sink run as a fork of a process that imported it once (certification.warm_start)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entry: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    """The entry point (``module:function``) of the console script the commands start with."""
    preload: tuple[str, ...] = Field(default=(), max_length=64)
    """Modules worth importing ahead: the ones its commands import inside functions."""

    def entry_of(self) -> WarmEntry:
        return WarmEntry(self.entry, self.preload)


class SinkSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_id: Literal["restproof.sink_under_test.v2"]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")
    role: Role
    description: str = Field(max_length=300)
    run: tuple[str, ...] = Field(min_length=1, max_length=64)
    recover: tuple[str, ...] | None = None
    operator: tuple[str, ...] | None = None
    result: Literal["reference_json", "units_json", "none"] = "none"
    failpoints: bool = False
    """The sink honours ``RESTPROOF_FAILPOINT`` (the reference sink's crash points)."""
    warm_start: WarmStart | None = None
    base_dir: Path | None = Field(default=None, exclude=True)
    """The sink file's directory: ``{sink_dir}`` in its commands."""

    @field_validator("run", "recover", "operator")
    @classmethod
    def _plain_arguments(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for argument in value or ():
            if "\x00" in argument or len(argument) > 4096:
                raise ValueError("a command argument holds a NUL character or is over 4096 characters")
            for name in SPREAD_PLACEHOLDERS:
                if "{" + name + "}" in argument and argument != "{" + name + "}":
                    raise ValueError(f"{{{name}}} expands to several arguments: it must be a whole argument")
        return value

    def uses_journal(self) -> bool:
        """Does any of its commands take the harness's journal (``{journal_args}``)?"""
        return any(argument == "{journal_args}"
                   for argument in (*self.run, *(self.recover or ()), *(self.operator or ())))


class SinkFileError(ValueError):
    """A sink file the harness refuses (invalid input: exit 2)."""


def load_sink(path: Path) -> SinkSpec:
    try:
        document = load_yaml(path)
        if isinstance(document, dict) and document.get("schema_id") == "restproof.sink_under_test.v1":
            raise SinkFileError(f"{path}: schema restproof.sink_under_test.v1 has no explicit role; "
                                "write schema_id restproof.sink_under_test.v2 with role: certified | baseline")
        spec = SinkSpec.model_validate(document)
    except DocumentError as exc:
        raise SinkFileError(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SinkFileError(f"{path}: not a sink file ({where}: {first['msg']})") from None
    return spec.model_copy(update={"base_dir": path.resolve().parent})


def bundled_sinks() -> dict[str, SinkSpec]:
    return {spec.name: spec for spec in (load_sink(path) for path in sorted(BUNDLED.glob("*.yaml")))}


@dataclass(frozen=True, slots=True)
class Finished:
    exit_code: int
    """Negative: killed by that signal."""
    stdout: str
    started_at: float
    ended_at: float
    timed_out: bool = False
    """The harness killed it at its time limit (a hang; never a fault of the row)."""
    cpu_s: float = 0.0
    """User + system CPU of the sink process (and of the children it reaped), from the kernel's
    accounting at reaping: where a run's time goes, never a verdict."""
    warm: bool = False
    """Forked from a warm server (certification.warm_start) rather than started as a fresh interpreter."""


def render(template: Sequence[str], values: Mapping[str, str],
           spreads: Mapping[str, Sequence[str]] | None = None) -> tuple[str, ...]:
    lists = {**SPREAD_PLACEHOLDERS, **(spreads or {})}
    rendered: list[str] = []
    for item in template:
        if item.startswith("{") and item.endswith("}") and item[1:-1] in lists:
            rendered.extend(lists[item[1:-1]])
            continue
        text = item
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        rendered.append(text)
    return tuple(rendered)


def default_values() -> dict[str, str]:
    return {"python": sys.executable, "delivery": str(Path(sys.executable).with_name("delivery"))}


@dataclass
class Launched:
    """A sink process held at the launcher until ``go()``; its pid is the sink's pid after exec."""

    invocation: Invocation
    before_reap: Callable[[], None] | None = None
    started_at: float = field(init=False)
    _output: bytearray = field(init=False, default_factory=bytearray)

    def __post_init__(self) -> None:
        self.invocation.cwd.mkdir(parents=True, exist_ok=True)
        self._go = self.invocation.cwd / f".go-{os.getpid()}-{time.monotonic_ns()}"
        self.started_at = time.time()
        self._process: SinkProcess = start(self.invocation, self._go)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        stdout = self._process.stdout
        for chunk in iter(lambda: stdout.read(65536), b""):
            room = MAX_RESULT_BYTES - len(self._output)
            if room > 0:
                self._output.extend(chunk[:room])
        stdout.close()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def warm(self) -> bool:
        """Forked from a warm server (rather than a fresh interpreter)?"""
        return isinstance(self._process, WarmProcess)

    def go(self) -> None:
        self.started_at = time.time()
        self._go.touch()

    def go_and_wait(self, timeout: float = RUN_TIMEOUT_S) -> Finished:
        self.go()
        return self.wait(timeout)

    def exited(self) -> bool:
        """Has it exited (without reaping it)?"""
        return self._process.exited()

    def wait(self, timeout: float = RUN_TIMEOUT_S) -> Finished:
        deadline = time.monotonic() + timeout
        timed_out = False
        while not self.exited():
            if time.monotonic() >= deadline:
                timed_out = True
                self._process.kill()  # still unreaped: the pid is ours
                while not self.exited():
                    time.sleep(0.01)
                break
            time.sleep(0.01)
        ended = time.time()
        if self.before_reap is not None:
            self.before_reap()
        code, cpu = self._process.reap()
        self._reader.join(timeout=10)
        self._go.unlink(missing_ok=True)
        return Finished(code, bytes(self._output).decode("utf-8", "replace"), self.started_at, ended, timed_out,
                        cpu, self.warm)

    def kill(self) -> None:
        """SIGKILL the sink (it is unreaped, so this pid is still the sink's)."""
        if not self.exited():
            self._process.kill()


def _last_document(stdout: str) -> Any:
    lines = stdout.strip().splitlines()
    if not lines:
        raise DocumentError("no output")
    return loads_json(lines[-1], "the result")


def _days(start: object, end: object, room: int) -> tuple[str, ...] | None:
    """The days of [start, end) (none when it is no range of days); None when they are more than ``room``."""
    try:
        first, last = date.fromisoformat(str(start)[:10]), date.fromisoformat(str(end)[:10])
    except ValueError:
        return ()
    if (last - first).days > room:
        return None
    return day_range(first.isoformat(), last.isoformat())


def unit_claims(spec: SinkSpec, stdout: str) -> tuple[dict[str, str], str | None]:
    """The sink's own claims per day, from its JSON result; and a problem text when a result it
    declares is missing or not in the documented shape (a crash, or a protocol violation)."""
    if spec.result == "none":
        return {}, None
    try:
        document = _last_document(stdout)
    except DocumentError as exc:
        return {}, f"its {spec.result} result is unreadable ({str(exc).split(': ')[-1]})"
    key = "children" if spec.result == "reference_json" else "units"
    if spec.result == "reference_json" and isinstance(document, dict) and document.get("ok") is False \
            and isinstance(document.get("errors"), list):
        return {}, None  # the documented error document: no claim about any day
    items = document.get(key) if isinstance(document, dict) else None
    if not isinstance(items, list):
        return {}, f"its {spec.result} result has no list of {key}"
    claims: dict[str, str] = {}
    room = MAX_CLAIMED_DAYS
    for item in items:
        if not isinstance(item, dict):
            return claims, f"its {spec.result} result lists a non-object"
        if spec.result == "reference_json":
            scope = item.get("scope")
            scope = scope if isinstance(scope, dict) else {}
            axes = item.get("axes")
            effect = axes.get("remote_effect") if isinstance(axes, dict) else None
            status = item.get("status")
            outcome = "completed" if status == "completed" else "unknown" if effect == "UNKNOWN" else \
                "partial" if effect == "PARTIALLY_APPLIED" else "failed"
            days = _days(scope.get("start"), scope.get("end"), room)
        else:
            outcome = "completed" if item.get("status") == "completed" else "failed"
            days = _days(item.get("scope_from"), item.get("scope_to"), room)
        if days is None:
            return claims, f"its {spec.result} result names more than {MAX_CLAIMED_DAYS} days"
        room -= len(days)
        for day in days:
            claims[day] = outcome
    return claims, None


SEED_CODES = frozenset({
    "REST_DELIVERY_APPEND_SCOPE_ALREADY_APPLIED", "REST_DELIVERY_COUNT_MISMATCH", "REST_DELIVERY_INTENT_CONFLICT",
    "REST_DELIVERY_JOURNAL_EPOCH_BLOCKED", "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT",
    "REST_DELIVERY_PARTIALLY_APPLIED", "REST_DELIVERY_PROTOCOL_UNKNOWN", "REST_DELIVERY_RECEIPT_EXPIRED",
    "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", "REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET",
    "REST_DELIVERY_SCOPE_EXCEEDS_LIMIT", "REST_DELIVERY_STALE_GENERATION", "REST_DELIVERY_UNSAFE_RETRY",
})
"""The design's stable delivery codes (the seed's catalogue, read by the harness, not the sink's enum)."""
OTHER_CODE = "other"
MAX_STATED = 8


def stated_codes(spec: SinkSpec, stdout: str) -> tuple[str, ...]:
    """The stable codes the sink's result states, for the reader of a history (no checker uses them):
    the reference result's ``error_code`` and its children's, an error document's ``errors[].code``,
    a unit's ``code``. Only the seed's catalogue is kept verbatim; any other value is ``other``, so a
    sink's free text (a secret, a row) never reaches the evidence."""
    if spec.result == "none":
        return ()
    try:
        document = _last_document(stdout)
    except DocumentError:
        return ()
    if not isinstance(document, dict):
        return ()
    found: list[object] = [document.get("error_code")]
    for key in ("children", "units", "errors"):
        group = document.get(key)
        if isinstance(group, list):
            found.extend(item.get("error_code", item.get("code")) for item in group[:1000] if isinstance(item, dict))
    codes = dict.fromkeys(code if isinstance(code, str) and code in SEED_CODES else OTHER_CODE
                          for code in found if code is not None)
    return tuple(codes)[:MAX_STATED]


def checkpoint_claim(spec: SinkSpec, stdout: str) -> str | None:
    """The first day the sink says its source checkpoint does NOT cover yet (everything before it is
    claimed delivered): ``frontier.frontier_scope_end`` of the reference result, ``checkpoint`` of a
    units result. None when it claims none."""
    if spec.result == "none":
        return None
    try:
        document = _last_document(stdout)
    except DocumentError:
        return None
    if not isinstance(document, dict):
        return None
    value = document.get("checkpoint")
    if spec.result == "reference_json":
        frontier = document.get("frontier")
        value = frontier.get("frontier_scope_end") if isinstance(frontier, dict) else None
    return value[:10] if isinstance(value, str) and len(value) >= 10 else None


def blocked_children(stdout: str) -> list[str]:
    """Child operation ids the reference sink reported blocked with an unknown or partial effect."""
    try:
        document = _last_document(stdout)
    except DocumentError:
        return []
    children = document.get("children") if isinstance(document, dict) else None
    if not isinstance(children, list):
        return []
    blocked = []
    for child in children:
        if not isinstance(child, dict) or child.get("status") != "blocked":
            continue
        axes = child.get("axes")
        operation = child.get("operation_id")
        if isinstance(axes, dict) and axes.get("remote_effect") in ("UNKNOWN", "PARTIALLY_APPLIED") \
                and isinstance(operation, str) and len(operation) <= 200:
            blocked.append(operation)
    return blocked
