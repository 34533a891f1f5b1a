"""Sealed payloads are accepted by the mock receiver exactly as sealed (wire bytes as sent)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from sink.artifacts import LocalArtifactStore
from sink.payload.body import WireBody
from tests.payload.pl_helpers import GOLDEN_RECORDS, bundled_plan, seal

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mock_receiver"))
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from mr_support import admin_items, bundled, client_for

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("workload", "receiver"), [("measurements-async", "dataset-jobs"),
                                                   ("measurements-sync", "json-batches")])
def test_every_sealed_child_is_accepted_with_all_rows(tmp_path: Path, workload: str, receiver: str) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    plan = bundled_plan(workload)
    topology = seal(plan, store)
    accepted = 0
    with client_for(bundled(receiver), tmp_path / "receiver") as client:
        for child in topology.children:
            body = WireBody.load(store, child.manifest_ref)
            data = b"".join(body.chunks())
            assert len(data) == child.wire_bytes
            headers = {"content-type": body.content_type,
                       **{name: value for name, value in child.spec.rendered.headers}}
            if body.content_encoding:
                headers["content-encoding"] = body.content_encoding
            response = client.post(child.spec.rendered.path_and_query, content=data, headers=headers)
            assert response.status_code in (200, 201, 202), response.text
            if response.status_code == 202:
                job = response.json()["job_id"]
                for _ in range(5):
                    state = client.get(f"{child.spec.rendered.path_and_query}/{job}").json()
                    if state["phase"] == "complete":
                        break
                assert state["phase"] == "complete"
                assert (state["accepted_rows"], state["rejected_rows"]) == (child.rows, 0)
            else:
                assert (response.json()["accepted_rows"], response.json()["rejected_rows"]) == (child.rows, 0)
            accepted += child.rows
        assert accepted == len(GOLDEN_RECORDS)
        assert admin_items(client, "effects")
