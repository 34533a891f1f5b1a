"""Sinks under test: the small adapter contract every sink meets (docs/certification.md).

A sink is a command. The harness starts it with the receiver URL (through the fault proxy), the
dataset (a workload file and the exported request bundle), a state directory and a worker id, and
reads its exit code and, optionally, a JSON result on stdout. ``recover`` is what an orchestrator
runs after a crash or a failed run, as another host: a fresh process with its own worker id and
working directory that shares only the state directory. ``operator`` (optional) is run once per
child the sink reports blocked with an unknown effect.

Every process is started through a tiny launcher that reports its pid and waits for a go signal
before ``exec``-ing the sink, so a fault that must kill *that* process is armed before its first
byte, without races and without the sink's cooperation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SINK_SCHEMA = "restproof.sink_under_test.v1"
BUNDLED = Path(__file__).resolve().parents[1] / "scenarios" / "sinks"
RUN_TIMEOUT_S = 120.0
_LAUNCHER = (
    "import os, sys, time\n"
    "go = sys.argv[1]\n"
    "deadline = time.monotonic() + 30\n"
    "while not os.path.exists(go) and time.monotonic() < deadline:\n"
    "    time.sleep(0.005)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


class SinkSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_id: Literal["restproof.sink_under_test.v1"]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")
    description: str = Field(max_length=300)
    run: tuple[str, ...] = Field(min_length=1, max_length=64)
    recover: tuple[str, ...] | None = None
    operator: tuple[str, ...] | None = None
    result: Literal["reference_json", "units_json", "none"] = "none"
    failpoints: bool = False
    """The sink honours ``RESTPROOF_FAILPOINT`` (the reference sink's crash points)."""


def load_sink(path: Path) -> SinkSpec:
    from sink.bounded_yaml import load_bounded_yaml_file  # noqa: PLC0415 - the one YAML entry point

    return SinkSpec.model_validate(load_bounded_yaml_file(path))


def bundled_sinks() -> dict[str, SinkSpec]:
    return {spec.name: spec for spec in (load_sink(path) for path in sorted(BUNDLED.glob("*.yaml")))}


@dataclass(frozen=True, slots=True)
class Invocation:
    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Finished:
    exit_code: int
    """Negative: killed by that signal."""
    stdout: str
    seconds: float


def render(template: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
    rendered = []
    for item in template:
        text = item
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        rendered.append(text)
    return tuple(rendered)


def default_values() -> dict[str, str]:
    return {"python": sys.executable, "delivery": str(Path(sys.executable).with_name("delivery"))}


class Launched:
    """A sink process held at the launcher until ``go()``; its pid is the sink's pid after exec."""

    def __init__(self, invocation: Invocation) -> None:
        invocation.cwd.mkdir(parents=True, exist_ok=True)
        self._go = invocation.cwd / f".go-{os.getpid()}-{time.monotonic_ns()}"
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(self._go), *invocation.argv], cwd=invocation.cwd,
            env=dict(invocation.env), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def go(self) -> None:
        self._go.touch()

    def go_and_wait(self, timeout: float = RUN_TIMEOUT_S) -> Finished:
        self.go()
        return self.wait(timeout)

    def wait(self, timeout: float = RUN_TIMEOUT_S) -> Finished:
        try:
            stdout, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            stdout, _ = self.process.communicate()
        self._go.unlink(missing_ok=True)
        return Finished(self.process.returncode, stdout.decode("utf-8", "replace")[-1_000_000:],
                        time.monotonic() - self.started)


def unit_outcomes(spec: SinkSpec, stdout: str, unit_of: Mapping[tuple[str, str], str]) -> dict[str, str]:
    """The sink's own claims per delivery unit, from its JSON result (empty when it has none)."""
    try:
        document = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    except (ValueError, IndexError):
        return {}
    claims: dict[str, str] = {}
    if spec.result == "reference_json" and isinstance(document, dict):
        for child in document.get("children", []):
            scope = child.get("scope", {})
            unit = unit_of.get((str(scope.get("start", ""))[:10], str(scope.get("end", ""))[:10]))
            if unit is not None:
                status = child.get("status")
                effect = child.get("axes", {}).get("remote_effect")
                claims[unit] = "completed" if status == "completed" else (
                    "unknown" if effect == "UNKNOWN" else "partial" if effect == "PARTIALLY_APPLIED" else "failed")
    elif spec.result == "units_json" and isinstance(document, dict):
        for item in document.get("units", []):
            unit = unit_of.get((str(item.get("scope_from")), str(item.get("scope_to"))))
            if unit is not None:
                claims[unit] = "completed" if item.get("status") == "completed" else "failed"
    return claims


def blocked_children(stdout: str) -> list[str]:
    """Child operation ids the reference sink reported blocked with an unknown or partial effect."""
    try:
        document = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return []
    if not isinstance(document, dict):
        return []
    return [str(child["operation_id"]) for child in document.get("children", [])
            if child.get("status") == "blocked"
            and child.get("axes", {}).get("remote_effect") in ("UNKNOWN", "PARTIALLY_APPLIED")]
