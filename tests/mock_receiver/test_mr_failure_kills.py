"""A data request whose handling fails inside the receiver (a bug stand-in: a function of the handler
made to raise) is still in the request log and frees what it reserved; a request is judged by the
behaviour it arrived under; a job of a resource the active behaviour no longer declares is neither
settled nor advanced under another resource's rules. In process (fast), for the mutation gate; the same
classes run through a real server in test_mr_broken_server.py."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from mr_kill_support import BATCHES, PROBLEM, advance, async_behaviour, problem_type, submit_job
from mr_support import admin_items, bundled, client_for, rows_for

from mock_receiver import async_api, sync_api
from mock_receiver.behaviour import Behaviour, parse_behaviour

pytestmark = pytest.mark.timeout(60)

RANGE = {"range_start": "2026-05-01", "range_end": "2026-05-04"}
MEASUREMENTS = BATCHES.format("measurements")
ROWS = rows_for(["2026-05-01"])


class Boom(RuntimeError):
    """The injected failure."""


def _raise(*_: Any, **__: Any) -> Any:
    raise Boom("SENTINEL-boom")


def _logged(client: Any, **filters: Any) -> list[tuple[Any, ...]]:
    return [(row["status"], row["outcome"], row["problem"], row["receipt_id"], row["effect_id"], row["job_id"])
            for row in admin_items(client, "requests", **filters)]


def _assert_500(response: Any) -> None:
    assert response.status_code == 500
    assert problem_type(response) == PROBLEM + "internal_error"
    assert "SENTINEL" not in response.text


@pytest.mark.parametrize("personality", ["stripe-like", "json-batches"])
def test_a_failed_sync_effect_is_logged_and_its_key_freed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          personality: str) -> None:
    with client_for(bundled(personality), tmp_path) as client:
        with monkeypatch.context() as patch:
            patch.setattr(sync_api, "apply_effect", _raise)
            _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k1"}))
        assert _logged(client, idempotency_key="k1") == [(500, "error", "internal_error", None, None, None)]
        assert admin_items(client, "effects") == []
        retry = client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k1"})
        assert retry.status_code in (200, 201), retry.text  # not 409 idempotency_key_in_use
        assert len(admin_items(client, "effects", idempotency_key="k1")) == 1


def test_a_failed_reservation_is_logged_and_nothing_stays_reserved(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        with monkeypatch.context() as patch:
            patch.setattr(sync_api._SyncRequest, "reserve", _raise)
            _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k2"}))
        assert _logged(client) == [(500, "error", "internal_error", None, None, None)]
        assert client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k2"}).status_code == 200


def test_a_completed_key_is_not_released_by_a_later_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a reservation this request made is freed: a same-key repeat that fails leaves the stored
    answer of the first request in place."""
    with client_for(bundled("stripe-like"), tmp_path) as client:
        first = client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k3"})
        assert first.status_code == 200
        with monkeypatch.context() as patch:
            patch.setattr(sync_api._SyncRequest, "_answer_existing", _raise)
            _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k3"}))
        replay = client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k3"})
        assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
        assert replay.content == first.content
        assert len(admin_items(client, "effects")) == 1


def test_a_failure_while_reading_a_sync_request_is_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        monkeypatch.setattr(sync_api, "decode_body", _raise)
        _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "k4"}))
        assert _logged(client, idempotency_key="k4") == [(500, "error", "internal_error", None, None, None)]


def test_a_failed_job_submit_is_logged_and_its_key_stays_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        with monkeypatch.context() as patch:
            patch.setattr(async_api, "create_job", _raise)
            _assert_500(submit_job(client, "job-k", ROWS, RANGE["range_start"], RANGE["range_end"]))
        assert _logged(client) == [(500, "error", "internal_error", None, None, None)]
        assert admin_items(client, "jobs") == []
        accepted = submit_job(client, "job-k", ROWS, RANGE["range_start"], RANGE["range_end"])
        assert accepted.status_code == 202, accepted.text  # not a duplicate of a job that never existed


def test_a_failure_while_reading_a_job_is_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        monkeypatch.setattr(async_api, "decode_body", _raise)
        _assert_500(submit_job(client, "job-r", ROWS, RANGE["range_start"], RANGE["range_end"]))
        assert _logged(client) == [(500, "error", "internal_error", None, None, None)]


def test_a_failed_poll_is_logged_with_its_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "job-p", ROWS, RANGE["range_start"], RANGE["range_end"]).json()["job_id"]
        with monkeypatch.context() as patch:
            patch.setattr(async_api, "observe_job", _raise)
            _assert_500(client.get(f"/mock/v1/dataset-jobs/{job_id}"))
        assert _logged(client, endpoint="job_poll") == [(500, "error", "internal_error", None, None, job_id)]
        assert admin_items(client, "jobs")[0]["polls"] == 0


def test_a_failure_logs_one_line_naming_the_exception_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        monkeypatch.setattr(sync_api, "apply_effect", _raise)
        client.post(MEASUREMENTS, params=RANGE, json=ROWS)
    lines = [record.getMessage() for record in caplog.records if record.name == "mock_receiver"]
    assert lines == ["mock-receiver: internal error Boom on sync_submit"]


# --- one behaviour per request ---------------------------------------------------------------------


def _switching_reader(original: Any, receiver: Any, replacement: Any) -> Any:
    async def read(*args: Any, **kwargs: Any) -> bytes:
        receiver.switch(replacement)  # the switch lands while the body is being read
        return bytes(await original(*args, **kwargs))
    return read


def _other(resources: dict[str, Any], **async_jobs: Any) -> Behaviour:
    """A behaviour named "other" whose async jobs run on its resource "events"."""
    return parse_behaviour({"name": "other", "resources": resources,
                            "async_jobs": {"resource": "events", **async_jobs}})


EVENTS = {"events": {"mutation": "incremental_append", "date_field": "d"}}
OTHER = _other(EVENTS)


def test_a_job_upload_is_judged_by_the_behaviour_it_arrived_under(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        receiver = client.app.state.receiver  # type: ignore[attr-defined]
        monkeypatch.setattr(async_api, "read_body_bounded",
                            _switching_reader(async_api.read_body_bounded, receiver, OTHER))
        response = submit_job(client, "mid-switch", ROWS, RANGE["range_start"], RANGE["range_end"])
        assert response.status_code == 202, response.text
        assert receiver.behaviour.name == "other"
        assert [job["resource"] for job in admin_items(client, "jobs")] == ["measurements"]


def test_a_sync_upload_is_judged_by_the_behaviour_it_arrived_under(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        receiver = client.app.state.receiver  # type: ignore[attr-defined]
        monkeypatch.setattr(sync_api, "read_body_bounded",
                            _switching_reader(sync_api.read_body_bounded, receiver, OTHER))
        response = client.post(MEASUREMENTS, params=RANGE, json=ROWS)
        assert response.status_code == 200, response.text
        assert [effect["resource"] for effect in admin_items(client, "effects")] == ["measurements"]


def test_a_job_of_an_undeclared_resource_is_shown_as_it_stands(tmp_path: Path) -> None:
    with client_for(async_behaviour(complete_after_polls=1), tmp_path) as client:
        job_id = submit_job(client, "kept", ROWS, RANGE["range_start"], RANGE["range_end"]).json()["job_id"]
        receiver = client.app.state.receiver  # type: ignore[attr-defined]
        receiver.switch(_other(EVENTS, complete_after_polls=1))
        poll = client.get(f"/mock/v1/dataset-jobs/{job_id}")
        assert poll.status_code == 200 and poll.json()["phase"] == "pending"
        assert admin_items(client, "jobs")[0]["polls"] == 0 and admin_items(client, "effects") == []
        receiver.switch(async_behaviour(complete_after_polls=1))
        assert client.get(f"/mock/v1/dataset-jobs/{job_id}").json()["phase"] == "complete"


def test_the_clock_settles_only_the_jobs_of_the_configured_resource(tmp_path: Path) -> None:
    timed = {"complete_after_polls": None, "complete_after_seconds": 60}
    with client_for(async_behaviour(**timed), tmp_path) as client:
        submit_job(client, "timed", ROWS, RANGE["range_start"], RANGE["range_end"])
        receiver = client.app.state.receiver  # type: ignore[attr-defined]
        receiver.switch(_other({"measurements": {"mutation": "partition_replace", "date_field": "business_date"},
                                "events": {"mutation": "incremental_append", "date_field": "business_date"}},
                               **timed))
        advance(client, 3600)
        assert [job["state"] for job in admin_items(client, "jobs")] == ["pending"]
        assert admin_items(client, "effects") == []
        receiver.switch(async_behaviour(**timed))
        advance(client, 1)
        assert [job["state"] for job in admin_items(client, "jobs")] == ["complete"]
        assert [effect["resource"] for effect in admin_items(client, "effects")] == ["measurements"]



# --- what a failed request releases: its own reservation, nothing else --------------------------------


def test_a_failure_never_frees_a_reservation_it_did_not_make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reservation left by another request (here: a process killed mid-request) is not this request's
    to free when this one fails before reserving anything."""
    with client_for(bundled("stripe-like"), tmp_path) as client:
        with sqlite3.connect(tmp_path / "ledger.sqlite3") as other:
            other.execute("INSERT INTO fences (fence, resource, fence_key, request_digest, created_at) "
                          "VALUES ('idempotency_key', 'measurements', 'held', 'x', ?)", (time.time(),))
        with monkeypatch.context() as patch:
            patch.setattr(sync_api._SyncRequest, "_live_fence", _raise)
            _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "held"}))
        still_held = client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "held"})
        assert still_held.status_code == 409 and problem_type(still_held) == PROBLEM + "idempotency_key_in_use"


def _then_fail(work: Any) -> Any:
    """decide_with_delays replaced: ``work`` runs on the ledger first, then the request fails."""
    async def failing(receiver: Any, decision: Any, record: Any, decide: Any) -> Any:
        await receiver.ledger.run(lambda txn: work(receiver, txn, decide))
        raise Boom("after the ledger work")
    return failing


def test_a_failure_after_its_reservation_vanished_is_still_logged(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An admin reset between the reservation and the failure removed the row: nothing to free, and the
    failed request is logged all the same."""
    with client_for(bundled("stripe-like"), tmp_path) as client:
        monkeypatch.setattr(sync_api, "decide_with_delays",
                            _then_fail(lambda receiver, txn, _: receiver.ledger.reset_all(txn)))
        _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "gone"}))
        assert _logged(client, idempotency_key="gone") == [(500, "error", "internal_error", None, None, None)]


def test_a_failure_never_frees_a_stored_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a reservation (no stored answer) is freed: a key whose answer was stored stays fenced."""
    with client_for(bundled("stripe-like"), tmp_path) as client:
        monkeypatch.setattr(sync_api, "decide_with_delays", _then_fail(lambda _, txn, decide: decide(txn)))
        _assert_500(client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "stored"}))
        monkeypatch.undo()
        repeat = client.post(MEASUREMENTS, params=RANGE, json=ROWS, headers={"Idempotency-Key": "stored"})
        assert repeat.status_code == 200 and repeat.headers["idempotent-replayed"] == "true"
        assert len(admin_items(client, "effects")) == 1


def test_a_required_request_id_names_what_is_missing(tmp_path: Path) -> None:
    document = bundled("aip-155-request-id").model_dump(mode="json")
    document["sync"]["fence"]["required"] = True
    with client_for(parse_behaviour(document), tmp_path) as client:
        response = client.post(MEASUREMENTS, params=RANGE, json=ROWS)
        assert response.status_code == 400 and problem_type(response) == PROBLEM + "fence_key_required"
        assert response.json()["detail"] == "a request id is required"
