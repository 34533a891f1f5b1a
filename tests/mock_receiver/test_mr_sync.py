"""Sync batch protocol: body formats, data semantics, per-record results, summaries."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from mr_support import admin_items, behaviour_with, bundled, client_for, csv_bytes, rows_for

from mock_receiver.canonical import encode_row, multiset_digest

pytestmark = pytest.mark.timeout(60)

BATCHES = "/mock/v1/resources/{}/batches"
RANGE = {"range_start": "2026-03-01", "range_end": "2026-03-04"}
DAYS = ["2026-03-01", "2026-03-02", "2026-03-03"]


def _summary(client, resource: str = "measurements", **scope: str) -> dict:
    response = client.get(f"/mock/v1/resources/{resource}/summary", params=scope)
    assert response.status_code == 200, response.text
    return response.json()


def _plain(tmp_path: Path):
    return client_for(bundled("stripe-like"), tmp_path)


def test_every_body_format_applies_the_same_rows_and_summary(tmp_path: Path) -> None:
    rows = rows_for(DAYS)
    expected = multiset_digest(encode_row({k: str(v) for k, v in row.items()}) for row in rows)
    ndjson = "\n".join(json.dumps(row) for row in rows).encode()
    bodies = [
        ({"content-type": "application/json"}, json.dumps(rows).encode()),
        ({"content-type": "application/x-ndjson"}, ndjson),
        ({"content-type": "text/csv"}, csv_bytes(rows)),
        ({"content-type": "text/csv", "content-encoding": "gzip"}, gzip.compress(csv_bytes(rows))),
        ({"content-type": "application/gzip"}, gzip.compress(json.dumps(rows).encode())),
        ({"content-type": "application/gzip", "content-encoding": "gzip"},
         gzip.compress(gzip.compress(csv_bytes(rows)))),
    ]
    for index, (headers, body) in enumerate(bodies):
        with client_for(bundled("stripe-like"), tmp_path / str(index)) as client:
            response = client.post(BATCHES.format("measurements"), params=RANGE, content=body, headers=headers)
            assert response.status_code == 200, (headers, response.text)
            assert response.json()["accepted_rows"] == 3
            assert response.json()["rejected_rows"] == 0
            summary = _summary(client, **RANGE)
            assert summary["row_count"] == 3
            assert summary["content_digest"] == expected, headers
            effects = admin_items(client, "effects")
            assert len(effects) == 1 and effects[0]["content_digest"] == expected


def test_multipart_sync_batch_takes_its_range_from_scalar_parts(tmp_path: Path) -> None:
    with _plain(tmp_path) as client:
        response = client.post(BATCHES.format("measurements"),
                               files={"file": ("batch.csv", csv_bytes(rows_for(DAYS)), "text/csv")},
                               data=RANGE)
        assert response.status_code == 200, response.text
        effect = admin_items(client, "effects")[0]
        assert (effect["scope_start"], effect["scope_end"], effect["accepted_rows"]) == ("2026-03-01",
                                                                                          "2026-03-04", 3)


def test_partition_replace_replaces_only_rows_inside_the_half_open_range(tmp_path: Path) -> None:
    with _plain(tmp_path) as client:
        first = client.post(BATCHES.format("measurements"), params={"range_start": "2026-03-01",
                                                                     "range_end": "2026-03-06"},
                            json=rows_for(["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05"]))
        assert first.status_code == 200
        second = client.post(BATCHES.format("measurements"), params=RANGE, json=rows_for(DAYS[:1], tag="new"))
        assert second.status_code == 200
        assert _summary(client, **RANGE)["row_count"] == 1
        # 2026-03-04 is the exclusive end of the replaced range: it survives.
        assert _summary(client, range_start="2026-03-04", range_end="2026-03-06")["row_count"] == 2
        effects = admin_items(client, "effects")
        assert [effect["replaced_rows"] for effect in effects] == [0, 3]


def test_incremental_append_keeps_earlier_rows(tmp_path: Path) -> None:
    with _plain(tmp_path) as client:
        for tag in ("a", "b"):
            response = client.post(BATCHES.format("events"), json=rows_for(DAYS, tag=tag, date_field="event_date"))
            assert response.status_code == 200
        assert _summary(client, "events")["row_count"] == 6
        assert len(admin_items(client, "effects", resource="events")) == 2


def test_partition_replace_without_range_is_rejected_and_logged(tmp_path: Path) -> None:
    with _plain(tmp_path) as client:
        response = client.post(BATCHES.format("measurements"), json=rows_for(DAYS))
        assert response.status_code == 422
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["type"].endswith("scope_required")
        assert admin_items(client, "effects") == []
        assert [r["outcome"] for r in admin_items(client, "requests")] == ["rejected"]


def test_rows_outside_the_range_or_without_a_date_are_rejected_per_record(tmp_path: Path) -> None:
    rows = [*rows_for(["2026-03-01", "2026-03-09"]), {"business_date": "not-a-date", "site": "x"}]
    with client_for(behaviour_with("stripe-like", sync={"record_results": "all"}), tmp_path) as client:
        response = client.post(BATCHES.format("measurements"), params=RANGE, json=rows)
        body = response.json()
        assert response.status_code == 200
        assert (body["accepted_rows"], body["rejected_rows"]) == (1, 2)
        assert body["records"] == [{"index": 0, "status": "accepted"},
                                   {"index": 1, "status": "rejected", "reason": "out_of_scope"},
                                   {"index": 2, "status": "rejected", "reason": "invalid_date"}]
        assert _summary(client, range_start="2026-03-01", range_end="2026-03-31")["row_count"] == 1


def test_put_is_refused_unless_the_resource_is_naturally_idempotent(tmp_path: Path) -> None:
    with _plain(tmp_path) as client:
        response = client.put(BATCHES.format("measurements"), params=RANGE, json=rows_for(DAYS))
        assert response.status_code == 405
        assert admin_items(client, "effects") == []
    resources = {"measurements": {"mutation": "partition_replace", "date_field": "business_date",
                                  "put_idempotent": True}}
    with client_for(behaviour_with("stripe-like", resources=resources), tmp_path / "put") as client:
        for _ in range(2):
            response = client.put(BATCHES.format("measurements"), params=RANGE, json=rows_for(DAYS))
            assert response.status_code == 200
        # Two PUTs are two recorded effects, but the applied state is that of one.
        assert len(admin_items(client, "effects")) == 2
        assert _summary(client, **RANGE)["row_count"] == 3


def test_summary_of_an_unknown_resource_is_a_404_problem(tmp_path: Path) -> None:
    with _plain(tmp_path) as client:
        response = client.get("/mock/v1/resources/nope/summary")
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"
