"""A web page cannot change the receiver's ground truth: every state-changing admin request needs the
admin header, a JSON (or, for the behaviour, YAML) body type, and no foreign Origin."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mr_support import ADMIN_HEADERS, TEST_HOST, admin_items, bundled, client_for, job_files, rows_for

from mock_receiver.app import create_data_app, open_receiver

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.timeout(60)

RANGE = {"range_start": "2026-07-01", "range_end": "2026-07-02"}
JSON = {"content-type": "application/json"}


@contextmanager
def _two_clients(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient]]:
    """(operator client with the admin header, bare client as a web page would send) on one receiver."""
    receiver = open_receiver(bundled("dataset-jobs"), tmp_path)
    app = create_data_app(receiver, include_admin=True, admin_host_names=TEST_HOST)
    try:
        with TestClient(app, headers=ADMIN_HEADERS) as operator, TestClient(app) as page:
            yield operator, page
    finally:
        receiver.ledger.close()


def _seed(operator: TestClient) -> str:
    assert operator.post("/mock/v1/resources/measurements/batches", params=RANGE,
                         json=rows_for(["2026-07-01"])).status_code == 200
    files, data = job_files("guard-key", rows_for(["2026-07-01"]), RANGE["range_start"], RANGE["range_end"])
    job_id: str = operator.post("/mock/v1/dataset-jobs", files=files, data=data).json()["job_id"]
    return job_id


def _state(operator: TestClient) -> tuple[Any, ...]:
    return (len(admin_items(operator, "effects")), len(admin_items(operator, "jobs", state="pending")),
            operator.get("/_admin/clock").json()["offset_seconds"], operator.get("/_admin/behaviour").json()["name"])


def _changes(job_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    behaviour = json.dumps(bundled("bare-409").model_dump(mode="json"))
    return [("POST", "/_admin/reset", {}),
            ("POST", "/_admin/clock/advance", {"content": json.dumps({"seconds": 99_999})}),
            ("PUT", "/_admin/behaviour", {"content": behaviour}),
            ("POST", f"/_admin/jobs/{job_id}/cancel", {})]


def test_state_changing_admin_requests_without_the_header_are_refused(tmp_path: Path) -> None:
    with _two_clients(tmp_path) as (operator, page):
        job_id = _seed(operator)
        before = _state(operator)
        for method, path, kwargs in _changes(job_id):
            response = page.request(method, path, headers=JSON, **kwargs)
            assert response.status_code == 403, (path, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["type"].endswith("admin_header_required")
            wrong_value = page.request(method, path, headers={**JSON, "X-Restproof-Admin": "true"}, **kwargs)
            assert wrong_value.status_code == 403
        assert _state(operator) == before
        # Reads stay open: certification reads the truth without ceremony.
        assert page.get("/_admin/health").status_code == 200


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          "text/plain", ""])
def test_form_and_text_bodies_are_refused_even_with_the_header(tmp_path: Path, content_type: str) -> None:
    """The content types a page can post without a preflight never change anything."""
    with _two_clients(tmp_path) as (operator, _):
        job_id = _seed(operator)
        before = _state(operator)
        for method, path, _ in _changes(job_id):
            response = operator.request(method, path, content=b"seconds=5",
                                        headers={"content-type": content_type})
            assert response.status_code == 415, (path, response.text)
            assert response.json()["type"].endswith("json_required")
        assert _state(operator) == before


def test_a_foreign_origin_is_refused_and_the_own_origin_accepted(tmp_path: Path) -> None:
    with _two_clients(tmp_path) as (operator, _):
        _seed(operator)
        for origin in ("http://evil.example", "null", "http://testserver.evil.example", "https://testserver"):
            response = operator.post("/_admin/reset", headers={**JSON, "Origin": origin}, content=b"{}")
            assert response.status_code == 403 and response.json()["type"].endswith("foreign_origin"), origin
        assert len(admin_items(operator, "effects")) == 1
        own = operator.post("/_admin/reset", headers={**JSON, "Origin": "http://testserver"}, content=b"{}")
        assert own.status_code == 200
        assert admin_items(operator, "effects") == []


def test_the_operator_path_works_with_json_and_yaml(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        yaml_body = b"name: yaml-switch\nresources:\n  m: {mutation: incremental_append, date_field: d}\n"
        switched = client.put("/_admin/behaviour", content=yaml_body, headers={"content-type": "application/yaml"})
        assert switched.status_code == 200 and switched.json()["name"] == "yaml-switch"
        # YAML is for the behaviour document only; the clock takes JSON.
        refused = client.post("/_admin/clock/advance", content=b"seconds: 5",
                              headers={"content-type": "application/yaml"})
        assert refused.status_code == 415
        advanced = client.post("/_admin/clock/advance", json={"seconds": 5})
        assert advanced.status_code == 200 and advanced.json()["offset_seconds"] == 5
        # A bodiless reset needs no content type.
        assert client.post("/_admin/reset").status_code == 200
