"""The toy sink against the real parts: a mock receiver, a fault proxy in front of it, and the TCP
fault proxy, each started on free ports for the test and stopped after it."""

import json

import pytest
from toy_sink import Batch, deliver

DAY, NEXT_DAY = "2026-03-02", "2026-03-03"
ROWS = [{"business_date": DAY, "station_id": "00017", "reading": "1.500", "label": "toy", "valid": True,
         "observed_at": "2026-03-02T05:00:00Z", "sample_count": 1}]
BATCH = Batch("POST", f"/mock/v1/resources/measurements/batches?range_start={DAY}&range_end={NEXT_DAY}",
              "application/json", json.dumps(ROWS).encode(), "toy-2026-03-02", DAY, NEXT_DAY)
CUT_AFTER_COMMIT = {"match": {"method": "POST"}, "fire": "once",
                    "fault": {"action": "close", "phase": "response"}}


@pytest.mark.restproof_receiver("json-batches")
def test_an_answer_lost_after_commit_is_resent_under_the_same_key(restproof_receiver, restproof_proxy):
    restproof_proxy.add_rule(CUT_AFTER_COMMIT)  # the receiver commits, then the proxy cuts its answer

    units = deliver(restproof_proxy.url, [BATCH])

    assert units[0]["status"] == "completed"
    assert len(restproof_receiver.effects()) == 1  # applied once ...
    posts = [entry for entry in restproof_proxy.log() if entry["method"] == "POST"]
    assert len(posts) == 2  # ... although the batch reached the receiver twice,
    assert {request["idempotency_key"] for request in restproof_receiver.requests()} == {BATCH.key}  # same key


def test_an_answer_reset_every_time_is_never_called_done(restproof_receiver, restproof_tcp_proxy):
    restproof_tcp_proxy.create("receiver", restproof_receiver.data_url)
    restproof_tcp_proxy.add_toxic("receiver", "reset_peer", {"timeout": 0})  # every answer: a TCP reset

    units = deliver(restproof_tcp_proxy.url("receiver"), [BATCH])

    assert units[0]["status"] == "unknown"  # no answer, so no claim
    assert len(restproof_receiver.effects()) == 1  # every attempt reached it; the key kept it to one effect
