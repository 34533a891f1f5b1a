"""A sentinel bearer token travels only in the Authorization header to the bound authority: never
in a log record, an exception, an evidence object, the fault proxy's log or the receiver's ledger."""

# ruff: noqa: F811  # fixtures imported from tr_fixtures are redefined as test parameters

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import httpx
import pytest
from tr_capture import CaptureServer
from tr_fixtures import fresh_proxy, proxy, receiver  # noqa: F401  # pytest fixtures
from tr_support import BATCHES, FaultProxy, batch_request, rows_json, start_receiver, timeouts

from sink.contracts.transport import FailureKind, PreparedRequest, SendCertainty
from sink.transport import HttpxRestTransport, auth_for, default_registry

pytestmark = pytest.mark.timeout(90)
TOKEN = f"SENTINEL-{uuid.uuid4().hex}"


def _transport(authority: str, environ: dict[str, str]) -> HttpxRestTransport:
    return HttpxRestTransport(authority, auth_for("bearer", "env://RESTPROOF_TEST_TOKEN", default_registry(environ)))


def test_the_token_reaches_the_peer_only_in_the_authorization_header() -> None:
    capture = CaptureServer()
    try:
        with _transport(capture.url, {"RESTPROOF_TEST_TOKEN": TOKEN}) as transport:
            outcome = transport.send(batch_request("k-cap", rows_json("c")), timeouts=timeouts())
    finally:
        capture.close()
    assert outcome.response is not None and outcome.response.status == 200
    (captured,) = capture.requests
    lines = captured.head.split(b"\r\n")
    carrying = [line for line in lines if TOKEN.encode() in line]
    assert carrying == [f"authorization: Bearer {TOKEN}".encode()]
    assert TOKEN.encode() not in captured.body_sample
    assert lines[0].startswith(b"POST /mock/v1/resources/measurements/batches?")


def _all_text(caplog: pytest.LogCaptureFixture) -> str:
    parts = [caplog.text]
    for record in caplog.records:
        parts += [record.getMessage(), repr(record.args), repr(record.__dict__)]
    return "\n".join(parts)


def test_sentinel_is_absent_from_logs_evidence_proxy_and_receiver(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    receiver = start_receiver(tmp_path / "receiver")
    proxy = FaultProxy(receiver.data_url)
    outcomes = []
    try:
        environ = {"RESTPROOF_TEST_TOKEN": TOKEN}
        with _transport(proxy.url, environ) as transport:
            outcomes.append(transport.send(batch_request("k-ok", rows_json("ok")), timeouts=timeouts()))
            proxy.control.add_rule({"match": {"path": BATCHES}, "fire": "once",
                                    "fault": {"action": "close", "phase": "response"}})
            outcomes.append(transport.send(batch_request("k-cut", rows_json("cut")), timeouts=timeouts()))
            proxy.control.add_rule({"match": {"path": BATCHES}, "fire": "once",
                                    "fault": {"action": "status", "status": 401,
                                              "body": json.dumps({"detail": "bad token"})}})
            outcomes.append(transport.send(batch_request("k-401", rows_json("u")), timeouts=timeouts()))
            environ["RESTPROOF_TEST_TOKEN"] = TOKEN + " with space"  # malformed: refused before any byte
            outcomes.append(transport.send(batch_request("k-bad", rows_json("b")), timeouts=timeouts()))
        proxy_log = json.dumps(proxy.control.log())
        ledger = httpx.get(f"{receiver.admin_url}/_admin/requests", timeout=10).text
    finally:
        proxy_stderr = proxy.stderr_text()
        receiver_stderr = receiver.stop()
    assert outcomes[0].response is not None and outcomes[0].response.status == 201
    assert outcomes[1].evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert outcomes[2].response is not None and outcomes[2].response.status == 401
    assert outcomes[3].evidence.failure is FailureKind.CREDENTIAL_UNAVAILABLE
    assert outcomes[3].evidence.certainty is SendCertainty.NOT_STARTED
    assert "authorization" in proxy_log  # the header name was seen, so the test looks at the right log
    assert "k-ok" in ledger
    for where, text in (("logs", _all_text(caplog)), ("evidence", repr(outcomes)), ("proxy log", proxy_log),
                        ("receiver ledger", ledger), ("proxy stderr", proxy_stderr),
                        ("receiver stderr", receiver_stderr)):
        assert TOKEN not in where + text, where
    assert any(record.name.startswith("httpcore") for record in caplog.records)  # debug logs were captured


def test_unresolvable_credential_and_foreign_path_never_send(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    capture = CaptureServer()
    try:
        with _transport(capture.url, {}) as transport:
            missing = transport.send(batch_request("k-none", rows_json("n")), timeouts=timeouts())
        with _transport(capture.url, {"RESTPROOF_TEST_TOKEN": TOKEN}) as transport:
            odd = PreparedRequest(method="POST", path_and_query="/caf\u00e9", semantic_headers=(),
                                  content_type=None, body=None)
            foreign = transport.send(odd, timeouts=timeouts())
    finally:
        capture.close()
    assert missing.evidence.failure is FailureKind.CREDENTIAL_UNAVAILABLE
    assert foreign.evidence.failure is FailureKind.AUTHORITY_REFUSED
    for outcome in (missing, foreign):
        assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
        assert outcome.evidence.request_bytes_to_kernel == 0
    assert capture.requests == []
    assert TOKEN not in _all_text(caplog)


def test_a_redirect_to_another_origin_gets_no_request_and_no_credential(fresh_proxy: FaultProxy) -> None:
    other = CaptureServer()
    try:
        fresh_proxy.control.add_rule({"match": {"path": BATCHES}, "fire": "once",
                                      "fault": {"action": "status", "status": 302,
                                                "headers": {"Location": other.url + "/steal"}, "body": ""}})
        with _transport(fresh_proxy.url, {"RESTPROOF_TEST_TOKEN": TOKEN}) as transport:
            outcome = transport.send(batch_request("k-302", rows_json("r")), timeouts=timeouts())
    finally:
        other.close()
    assert outcome.response is not None and outcome.response.status == 302
    assert other.requests == []
