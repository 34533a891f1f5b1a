"""GET /_admin/rows: the rows the receiver holds, on the admin listener only, in the documented
canonical encoding, with the effect that wrote each; replaced rows are gone, a reset empties it."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import httpx

from tests.mock_receiver.mr_support import RECEIVERS, ServerProcess, rows_for

RANGE = {"range_start": "2026-08-01", "range_end": "2026-08-03"}


def _decode(encoded: bytes) -> dict[str, str | None]:
    (count,) = struct.unpack_from(">I", encoded, 0)
    at, row = 4, {}
    for _ in range(count):
        (length,) = struct.unpack_from(">Q", encoded, at)
        key = encoded[at + 8:at + 8 + length].decode()
        at += 8 + length
        if encoded[at:at + 1] == b"N":
            row[key], at = None, at + 1
            continue
        (length,) = struct.unpack_from(">Q", encoded, at + 1)
        row[key] = encoded[at + 9:at + 9 + length].decode()
        at += 9 + length
    assert at == len(encoded)
    return row


def _rows(admin_url: str) -> list[dict[str, object]]:
    page = httpx.get(f"{admin_url}/_admin/rows", params={"limit": 10}).json()
    assert page["next_after"] is None
    return list(page["items"])


def test_rows_are_on_the_admin_listener_and_follow_replacements(tmp_path: Path) -> None:
    with ServerProcess(RECEIVERS / "json-batches.yaml", tmp_path) as server:
        assert httpx.get(f"{server.data_url}/_admin/rows").status_code == 404  # never on the data port
        assert _rows(server.admin_url) == []
        first = rows_for(["2026-08-01", "2026-08-02"], tag="a")
        answer = httpx.post(f"{server.data_url}/mock/v1/resources/measurements/batches", params=RANGE,
                            json=first, headers={"Idempotency-Key": "rows-1"})
        assert answer.status_code == 201
        held = _rows(server.admin_url)
        first_effects = {item["effect_id"] for item in held}
        assert len(first_effects) == 1
        assert sorted(item["row_date"] for item in held) == ["2026-08-01", "2026-08-02"]
        assert {item["resource"] for item in held} == {"measurements"}
        decoded = [_decode(base64.b64decode(str(item["encoded"]))) for item in held]
        assert sorted(decoded, key=str) == sorted(({k: str(v) for k, v in row.items()} for row in first), key=str)
        second = rows_for(["2026-08-01"], tag="b")
        httpx.post(f"{server.data_url}/mock/v1/resources/measurements/batches", params=RANGE, json=second,
                   headers={"Idempotency-Key": "rows-2"})
        held = _rows(server.admin_url)
        assert len(held) == 1  # the range was replaced: the first effect's rows are gone
        assert held[0]["effect_id"] not in first_effects and held[0]["row_date"] == "2026-08-01"
        httpx.post(f"{server.admin_url}/_admin/reset", headers={"X-Restproof-Admin": "1"})
        assert _rows(server.admin_url) == []
