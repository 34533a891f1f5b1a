"""Vendor exactness of the fence keys, through real `mock-receiver serve` processes: Stripe's keys (up to
255 characters, any a header can carry), the IETF draft's Structured Field String, AIP-155's request id
(a UUID, not the zero UUID, in a field of the request: a query parameter, never a header)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from mr_support import ADMIN_HEADERS, RECEIVERS, ServerProcess, admin_items, rows_for
from mr_wire import authority, exchange, request_bytes

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

RANGE = {"range_start": "2026-07-01", "range_end": "2026-07-02"}
BATCHES = "/mock/v1/resources/measurements/batches"
UUID = "8e03978e-40d5-43e8-bc93-6894a57f9324"


def _serve(name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / f"{name}.yaml", tmp_path_factory.mktemp(name)).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture(scope="module")
def stripe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("stripe-like", tmp_path_factory)


@pytest.fixture(scope="module")
def ietf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("ietf-idempotency-draft", tmp_path_factory)


@pytest.fixture(scope="module")
def aip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve("aip-155-request-id", tmp_path_factory)


def _admin(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.admin_url, headers=ADMIN_HEADERS, timeout=30)


def _send(server: ServerProcess, headers: list[tuple[str, str]], query: str = "", tag: str = "v") -> tuple[int, bytes]:
    """One sync batch with exactly these header lines (latin-1 on the wire, as a header's bytes are)."""
    body = json.dumps(rows_for(["2026-07-01"], tag=tag)).encode()
    answer = exchange(server.data_url, request_bytes(
        "POST", f"{BATCHES}?range_start=2026-07-01&range_end=2026-07-02{query}",
        [("Host", authority(server.data_url)), ("Content-Type", "application/json"),
         ("Content-Length", str(len(body))), ("Connection", "close"), *headers], body))
    assert answer.status is not None, answer.raw[:200]
    return answer.status, answer.body


STRIPE_KEYS = ["a" * 255, "YWJj+ZGVm/Z2hp==", "key with spaces inside", "k", "\xfcmlaut-latin1-\xe9",
               "!#$%&'()*+,;<=>?@[]^`{|}~"]


@pytest.mark.parametrize("key", STRIPE_KEYS)
def test_stripe_keys_up_to_255_characters_of_any_kind_fence(stripe: ServerProcess, key: str) -> None:
    first, body = _send(stripe, [("Idempotency-Key", key)])
    assert first == 200, body
    again, replay = _send(stripe, [("Idempotency-Key", key)])
    assert (again, replay) == (200, body)  # the stored answer, byte for byte
    with _admin(stripe) as admin:
        effects = admin_items(admin, "effects", idempotency_key=key)
        assert len(effects) == 1
        admin.post("/_admin/reset")


@pytest.mark.parametrize("key", ["a" * 256, "b" * 10_000])
def test_stripe_keys_longer_than_255_are_400(stripe: ServerProcess, key: str) -> None:
    status, body = _send(stripe, [("Idempotency-Key", key)])
    assert status == 400 and b"bad_fence_key" in body and key.encode() not in body


def test_the_ietf_key_is_a_structured_field_string(ietf: ServerProcess) -> None:
    with _admin(ietf) as admin:
        for wire, key in ((f'"{UUID}"', UUID), ('"a \\"quoted\\" key"', 'a "quoted" key'),
                          ('"back\\\\slash"', "back\\slash"), ('"with;semicolon";param=1', "with;semicolon"),
                          ('"spaces inside"', "spaces inside")):
            status, body = _send(ietf, [("Idempotency-Key", wire)])
            assert status == 201, (wire, body)
            assert len(admin_items(admin, "effects", idempotency_key=key)) == 1, wire
            assert _send(ietf, [("Idempotency-Key", wire)]) == (201, body)  # a replay
        admin.post("/_admin/reset")


@pytest.mark.parametrize("wire", [UUID, "token-form", '"unterminated', '"a" "b"', '"a", "b"', '""', "?1", "42",
                                  ":Ynl0ZXM=:", '"tab\tinside"', '"é"', '"' + "x" * 256 + '"'])
def test_the_ietf_key_in_any_other_form_is_400(ietf: ServerProcess, wire: str) -> None:
    status, body = _send(ietf, [("Idempotency-Key", wire)])
    assert status == 400 and b"bad_fence_key" in body, (wire, body)
    with _admin(ietf) as admin:
        assert admin_items(admin, "effects") == []


def test_the_aip_request_id_is_a_query_field(aip: ServerProcess) -> None:
    with _admin(aip) as admin:
        first, body = _send(aip, [], f"&requestId={UUID}")
        assert first == 200, body
        # the same request id, by the proto field name and in upper case: the same request
        for query in (f"&request_id={UUID}", f"&requestId={UUID.upper()}"):
            assert _send(aip, [], query) == (200, body)
        assert len(admin_items(admin, "effects", idempotency_key=UUID)) == 1
        # the header of the earlier wire contract is not a request id: applied unfenced, twice
        for _ in range(2):
            assert _send(aip, [("Request-Id", UUID)])[0] == 200
        assert len(admin_items(admin, "effects")) == 3
        # an empty value is an unset field
        assert _send(aip, [], "&requestId=")[0] == 200
        admin.post("/_admin/reset")


@pytest.mark.parametrize("query", ["&requestId=00000000-0000-0000-0000-000000000000", "&requestId=not-a-uuid",
                                   f"&requestId={UUID.replace('-', '')}", f"&requestId={{{UUID}}}",
                                   f"&requestId=urn:uuid:{UUID}", f"&requestId={UUID}x",
                                   f"&requestId={UUID}&request_id={UUID}", f"&requestId={UUID}&requestId={UUID}"])
def test_a_bad_or_doubled_aip_request_id_is_400(aip: ServerProcess, query: str) -> None:
    status, body = _send(aip, [], query)
    assert status == 400 and (b"bad_fence_key" in body or b"duplicate_fence_key" in body), (query, body)
    with _admin(aip) as admin:
        assert admin_items(admin, "effects") == []
        assert [row["status"] for row in admin_items(admin, "requests")][-1] == 400
        admin.post("/_admin/reset")


def test_the_aip_mismatch_still_answers_409(aip: ServerProcess) -> None:
    assert _send(aip, [], f"&requestId={UUID}", tag="first")[0] == 200
    status, body = _send(aip, [], f"&requestId={UUID}", tag="other")
    assert status == 409 and b"request_id_mismatch" in body
    with _admin(aip) as admin:
        admin.post("/_admin/reset")
