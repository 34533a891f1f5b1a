"""Deep, wide, long and large response bodies from a real peer become a stable parse_problem,
never evidence; a good body yields only the requested scalars."""

# ruff: noqa: F811  # fixtures imported from tr_fixtures are redefined as test parameters

from __future__ import annotations

import json
import uuid

import pytest
from tr_fixtures import fresh_proxy, proxy, receiver  # noqa: F401  # pytest fixtures
from tr_support import BATCHES, FaultProxy, batch_request, rows_json, timeouts

from sink.contracts.transport import ResponseBounds, SendCertainty
from sink.transport import HttpxRestTransport, NoAuth

pytestmark = pytest.mark.timeout(60)
BOUNDS = ResponseBounds(max_body_bytes=4096, max_depth=8, max_fields=100, max_string_length=256)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"receipt_id": ' + "[" * 50 + "1" + "]" * 50 + "}", "too_deep"),
        (json.dumps({"receipt_id": "r", "items": list(range(200))}), "too_many_fields"),
        (json.dumps({"receipt_id": "r" * 300}), "string_too_long"),
        (json.dumps({"receipt_id": "r", "pad": ["y" * 200] * 20}), "body_too_large"),
        ('{"receipt_id": "a", "receipt_id": "b"}', "duplicate_key"),
        ("<html>not json</html>", "not_json"),
    ],
)
def test_over_bound_bodies_are_a_parse_problem(fresh_proxy: FaultProxy, body: str, problem: str) -> None:
    fresh_proxy.control.add_rule({"match": {"path": BATCHES}, "fire": "once",
                                  "fault": {"action": "status", "status": 201, "body": body,
                                            "headers": {"Content-Type": "application/json"}}})
    with HttpxRestTransport(fresh_proxy.url, NoAuth(), bounds=BOUNDS) as transport:
        outcome = transport.send(batch_request(f"k-{uuid.uuid4().hex}", rows_json("d")), timeouts=timeouts())
    assert outcome.evidence.certainty is SendCertainty.RESPONSE_RECEIVED
    assert outcome.response is not None
    assert outcome.response.parse_problem == problem
    assert outcome.response.scalars == {}
    assert outcome.response.status == 201


def test_a_bounded_body_yields_the_requested_scalars(fresh_proxy: FaultProxy) -> None:
    body = json.dumps({"receipt_id": "rcpt_1", "accepted_rows": 3, "nested": {"secret": "x"}})
    fresh_proxy.control.add_rule({"match": {"path": BATCHES}, "fire": "once",
                                  "fault": {"action": "status", "status": 201, "body": body}})
    with HttpxRestTransport(fresh_proxy.url, NoAuth(), bounds=BOUNDS) as transport:
        outcome = transport.send(batch_request(f"k-{uuid.uuid4().hex}", rows_json("g")), timeouts=timeouts())
    assert outcome.response is not None and outcome.response.parse_problem is None
    assert outcome.response.scalars == {"/receipt_id": "rcpt_1", "/accepted_rows": 3}
    assert "x" not in repr(outcome.response.scalars.values())
