"""`delivery` as an operator runs it, against a real mock receiver through the fault proxy, on a
private copy of the scenarios (so a test may edit a workload, a binding or the source data)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml
from psycopg.conninfo import conninfo_to_dict
from sv_support import ADMIN, REPO, Services, start_services, stop

DELIVERY = str(Path(sys.executable).with_name("delivery"))
TOKEN = "e2e-sentinel-token-8d2f61"


@dataclass
class Result:
    code: int
    document: dict[str, Any]
    stderr: str

    @property
    def children(self) -> list[dict[str, Any]]:
        return list(self.document.get("children", []))

    @property
    def error_codes(self) -> list[str]:
        return [error["code"] for error in self.document.get("errors", [])]


class Operator:
    """A private scenarios tree whose binding points at the fault proxy, and one state directory."""

    def __init__(self, work: Path, services: Services, *, journal: str | None = None) -> None:
        self.services = services
        self.scenarios = work / "scenarios"
        for part in ("profiles", "bindings", "environments", "mappings", "workloads"):
            shutil.copytree(REPO / "scenarios" / part, self.scenarios / part)
        self.edit_yaml("bindings/mock_measurements.yaml", authority=services.proxy_url)
        self.state = work / "state"
        self.journal = journal

    def edit_yaml(self, relative: str, **fields: Any) -> None:
        path = self.scenarios / relative
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        document.update(fields)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")

    def workload(self, name: str) -> str:
        return str(self.scenarios / "workloads" / f"{name}.yaml")

    def delivery(self, *args: str, failpoint: str | None = None, token: bool = True, fmt: str = "json") -> Result:
        env = {**os.environ, "MOCK_RECEIVER_TOKEN": TOKEN}
        if not token:
            env.pop("MOCK_RECEIVER_TOKEN")
        env.pop("RESTPROOF_FAILPOINT", None)
        if failpoint:
            env["RESTPROOF_FAILPOINT"] = failpoint
        where = ["--state-dir", str(self.state), *(["--journal", self.journal] if self.journal else [])]
        done = subprocess.run([DELIVERY, *args, *where, "--format", fmt], check=False, capture_output=True,
                              text=True, env=env, timeout=240)
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        if fmt != "json":
            return Result(done.returncode, {"text": done.stdout}, done.stderr)
        lines = done.stdout.strip().splitlines()
        return Result(done.returncode, json.loads(lines[-1]) if lines else {}, done.stderr)

    def run(self, workload: str, scope_from: str, scope_to: str, *extra: str, failpoint: str | None = None,
            worker: str = "host-a", token: bool = True) -> Result:
        return self.delivery("run", self.workload(workload), "--scope-from", scope_from, "--scope-to", scope_to,
                             "--worker-id", worker, *extra, failpoint=failpoint, token=token)

    def gets(self) -> list[dict[str, Any]]:
        return [entry for entry in self.services.proxy_log() if entry["method"] == "GET"]

    def advance_clock(self, seconds: int) -> None:
        answer = self.services.http.post(self.services.admin_url + "/_admin/clock/advance", json={"seconds": seconds},
                                         headers=ADMIN)
        assert answer.status_code == 200, answer.text

    def inspect(self, operation_id: str) -> dict[str, Any]:
        return self.delivery("inspect", "--operation-id", operation_id).document

    # ----- the judges --------------------------------------------------------------------------
    def posts(self) -> list[dict[str, Any]]:
        return [entry for entry in self.services.proxy_log() if entry["method"] == "POST"]

    def behaviour(self) -> dict[str, Any]:
        document: dict[str, Any] = self.services.http.get(self.services.admin_url + "/_admin/behaviour").json()
        return document

    def switch_behaviour(self, behaviour: dict[str, Any]) -> None:
        http: httpx.Client = self.services.http
        answer = http.put(self.services.admin_url + "/_admin/behaviour", content=json.dumps(behaviour),
                          headers={**ADMIN, "content-type": "application/json"})
        assert answer.status_code == 200, answer.text


def url_dsn(keyword_dsn: str, dbname: str) -> str:
    """The ``postgresql://`` form ``delivery --journal`` takes, for another database of the server."""
    parts = conninfo_to_dict(keyword_dsn)
    return f"postgresql://{parts['user']}@{parts['host']}:{parts['port']}/{dbname}?connect_timeout=10"


@contextmanager
def running_services(personality: str, work: Path) -> Iterator[Services]:
    """A receiver of ``personality`` behind the fault proxy, stopped however the tests end."""
    running = start_services(personality, work)
    try:
        yield running
    finally:
        stop(running.proxy)
        stop(running.receiver)


@contextmanager
def operator_on(tmp_path: Path, services: Services,
                behaviour: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Iterator[Operator]:
    """An operator on freshly reset services; the receiver's behaviour (changed by ``behaviour`` or
    by the test) is put back afterwards, so the next test starts from the personality's own."""
    services.reset()
    op = Operator(tmp_path, services)
    original = op.behaviour()
    if behaviour is not None:
        op.switch_behaviour(behaviour(original))
    try:
        yield op
    finally:
        op.switch_behaviour(original)
