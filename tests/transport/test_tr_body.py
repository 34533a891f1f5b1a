"""Body streaming: exact length and digest, aborted before the last byte on a mismatch, and
NOT_STARTED when the source cannot even be opened."""

# ruff: noqa: F811  # fixtures imported from tr_fixtures are redefined as test parameters

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import httpx
import pytest
from tr_fixtures import fresh_proxy, proxy, receiver  # noqa: F401  # pytest fixtures
from tr_support import BytesBody, FaultProxy, ServerProcess, batch_request, rows_json, timeouts

from sink.contracts.transport import FailureKind, SendCertainty
from sink.transport import HttpxRestTransport, NoAuth
from sink.transport.body import BodyMismatch, VerifiedBody
from sink.transport.exchange import CURRENT, Exchange, IoFailure

pytestmark = pytest.mark.timeout(60)
DATA = b"0123456789" * 500
ALL_BUT_LAST = 4 * 1024  # BytesBody chunks of 1024: the last (904 bytes) is held back


def _collect(source: BytesBody) -> bytes:
    return b"".join(VerifiedBody(source))


def test_exact_bytes_pass() -> None:
    assert _collect(BytesBody(DATA, chunk=333)) == DATA
    assert _collect(BytesBody(b"")) == b""


@pytest.mark.parametrize(
    ("source", "reason", "yielded_max"),
    [
        (BytesBody(DATA, digest="sha256:" + "0" * 64), "digest_mismatch", ALL_BUT_LAST),
        (BytesBody(DATA, length=len(DATA) + 1), "shorter_than_sealed", ALL_BUT_LAST),
        (BytesBody(DATA, length=len(DATA) - 1), "longer_than_sealed", ALL_BUT_LAST),
        (BytesBody(b"x", digest="sha256:" + "0" * 64, chunk=1), "digest_mismatch", 0),
        (BytesBody(b"", length=1), "shorter_than_sealed", 0),
    ],
)
def test_mismatch_stops_before_the_last_chunk(source: BytesBody, reason: str, yielded_max: int) -> None:
    yielded = 0
    with pytest.raises(BodyMismatch) as raised:
        for chunk in VerifiedBody(source):
            yielded += len(chunk)
    assert raised.value.reason == reason
    assert yielded <= yielded_max


def test_a_mismatch_is_recorded_on_the_exchange_in_flight() -> None:
    exchange = Exchange(timeouts())
    token = CURRENT.set(exchange)
    try:
        with pytest.raises(BodyMismatch) as raised:
            list(VerifiedBody(BytesBody(DATA, length=len(DATA) + 1)))
    finally:
        CURRENT.reset(token)
    assert exchange.failure == IoFailure("body", "unavailable")
    assert "shorter_than_sealed" in str(raised.value)


class _Broken:
    length = 10
    digest = "sha256:" + hashlib.sha256(b"0123456789").hexdigest()

    def chunks(self) -> Iterator[bytes]:
        raise FileNotFoundError("/artifacts/secret-path")


def test_unopenable_source_is_not_started(receiver: ServerProcess) -> None:
    request = batch_request("k-broken", b"")
    request = type(request)(method="POST", path_and_query=request.path_and_query, semantic_headers=(),
                            content_type="application/json", body=_Broken())
    with HttpxRestTransport(receiver.data_url, NoAuth()) as transport:
        outcome = transport.send(request, timeouts=timeouts())
    assert outcome.evidence.failure is FailureKind.BODY_UNAVAILABLE
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
    assert outcome.evidence.request_bytes_to_kernel == 0


def test_a_wrong_digest_never_completes_the_request_at_the_receiver(
    receiver: ServerProcess, fresh_proxy: FaultProxy
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    body = rows_json("m", 200)
    source = BytesBody(body, digest="sha256:" + hashlib.sha256(b"other").hexdigest(), chunk=512)
    with HttpxRestTransport(fresh_proxy.url, NoAuth()) as transport:
        outcome = transport.send(batch_request(key, source), timeouts=timeouts())
    evidence = outcome.evidence
    assert evidence.failure is FailureKind.BODY_UNAVAILABLE
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert 0 < evidence.request_bytes_to_kernel < len(body) + 400  # headers + all but the held-back chunk
    items = httpx.get(f"{receiver.admin_url}/_admin/requests", params={"idempotency_key": key}).json()["items"]
    assert items == []
    def ended(entries: list[dict[str, object]]) -> bool:
        return bool(entries) and bool({"closed", "error"} & set(entries[-1]["timestamps"]))  # type: ignore[arg-type]

    entries = fresh_proxy.control.wait_for_log(ended, timeout=5)
    assert entries[-1]["forwarded"] != "yes"
