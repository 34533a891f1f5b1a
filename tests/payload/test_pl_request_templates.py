"""Rendering the profile's typed path, query, headers and multipart fields from the symbol set."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from sink.compiler.loading import load_document
from sink.contracts.profile import OperationProfile
from sink.contracts.profile_request import MultipartFileBody, ScalarPart
from sink.request_templates import (
    RenderError,
    RequestSymbols,
    render_filename,
    render_path_and_query,
    render_poll_path,
    render_scalar_parts,
    render_semantic_headers,
)

PROFILES = Path(__file__).resolve().parents[2] / "scenarios" / "profiles"
BATCHES = load_document(PROFILES / "mock.json-batches@1.yaml", OperationProfile)
JOBS = load_document(PROFILES / "mock.dataset-jobs@1.yaml", OperationProfile)


def symbols(resource: str = "measurements", key: str = "rmk_abc") -> RequestSymbols:
    return RequestSymbols(resource=resource, delivery_key="dk_1", receiver_mutation_key=key,
                          scope_from=date(2026, 6, 1), scope_to=date(2026, 6, 5))


def test_bundled_batch_profile_renders() -> None:
    assert render_path_and_query(BATCHES.request, symbols()) == (
        "/mock/v1/resources/measurements/batches?range_start=2026-06-01&range_end=2026-06-05")
    assert render_semantic_headers(BATCHES.request, symbols()) == (("idempotency-key", "rmk_abc"),)


@pytest.mark.parametrize(
    ("resource", "rendered"),
    [
        ("a/b", "/mock/v1/resources/a%2Fb/batches"),
        ("x?y=1&z#f", "/mock/v1/resources/x%3Fy%3D1%26z%23f/batches"),
        ("%2e%2e", "/mock/v1/resources/%252e%252e/batches"),
        ("caf\u00e9", "/mock/v1/resources/caf%C3%A9/batches"),
        ("a b", "/mock/v1/resources/a%20b/batches"),
        ("http://evil", "/mock/v1/resources/http%3A%2F%2Fevil/batches"),
        ("...", "/mock/v1/resources/.../batches"),
    ],
)
def test_values_are_percent_encoded(resource: str, rendered: str) -> None:
    assert render_path_and_query(BATCHES.request, symbols(resource)).split("?")[0] == rendered


@pytest.mark.parametrize("resource", ["", ".", ".."])
def test_values_that_would_change_the_path_are_refused(resource: str) -> None:
    with pytest.raises(RenderError) as refused:
        render_path_and_query(BATCHES.request, symbols(resource))
    assert refused.value.code == "render.path_traversal"


def test_query_values_are_encoded() -> None:
    spec = BATCHES.request.model_copy(update={"query": {"k": "{resource}"}})
    assert render_path_and_query(spec, symbols("a&b=c")).endswith("?k=a%26b%3Dc")


@pytest.mark.parametrize(
    ("key", "code"),
    [("a\r\nX-Evil: 1", "render.invalid_value"), ("tab\tbed", "render.invalid_value"),
     (" lead", "render.invalid_value"), ("trail ", "render.invalid_value"), ("caf\u00e9", "render.invalid_value"),
     ("", "render.invalid_value"), ("x" * 1025, "render.value_too_long")],
)
def test_header_values_must_be_visible_ascii(key: str, code: str) -> None:
    with pytest.raises(RenderError) as refused:
        render_semantic_headers(BATCHES.request, symbols(key=key))
    assert refused.value.code == code
    assert render_semantic_headers(BATCHES.request, symbols(key="x" * 1024)) == (("idempotency-key", "x" * 1024),)
    assert render_semantic_headers(BATCHES.request, symbols(key="a b~")) == (("idempotency-key", "a b~"),)


def test_an_invalid_template_is_refused_even_if_it_got_past_compilation() -> None:
    spec = BATCHES.request.model_construct(**{**dict(BATCHES.request), "path": "https://evil/{resource}"})
    with pytest.raises(RenderError) as refused:
        render_path_and_query(spec, symbols())
    assert refused.value.code == "render.bad_template"


def test_multipart_fields_and_poll_path() -> None:
    body = JOBS.request.body
    assert isinstance(body, MultipartFileBody)
    assert render_scalar_parts(body, symbols()) == (("range_start", "2026-06-01"), ("range_end", "2026-06-05"))
    assert render_filename(body.payload_part, symbols()) == "rmk_abc.csv.gz"
    assert render_filename(body.payload_part, symbols(key="a:b~c")) == "a:b~c.csv.gz"  # not percent-encoded
    with pytest.raises(RenderError) as refused:
        render_filename(body.payload_part, symbols(key="../x"))
    assert refused.value.code == "render.invalid_value"
    poll = JOBS.acknowledgement.poll
    assert poll is not None
    assert render_poll_path(poll, {"id": "job_1"}) == "/mock/v1/dataset-jobs/job_1"
    assert render_poll_path(poll, {"id": "a/b"}) == "/mock/v1/dataset-jobs/a%2Fb"
    assert render_poll_path(poll, {"id": 42}) == "/mock/v1/dataset-jobs/42"
    for receipt, code in (({}, "render.missing_value"), ({"id": None}, "render.missing_value"),
                          ({"id": True}, "render.missing_value"), ({"id": 1.5}, "render.missing_value"),
                          ({"id": ".."}, "render.path_traversal"), ({"id": ""}, "render.path_traversal")):
        with pytest.raises(RenderError) as refused:
            render_poll_path(poll, receipt)
        assert refused.value.code == code


def test_literal_scalar_parts_and_their_bounds() -> None:
    body = JOBS.request.body
    assert isinstance(body, MultipartFileBody)
    literal = body.model_copy(update={"scalar_parts": {"mode": ScalarPart(value="full"), **body.scalar_parts}})
    assert render_scalar_parts(literal, symbols())[0] == ("mode", "full")
    assert render_scalar_parts(literal, symbols(resource="x" * 1024))[0] == ("mode", "full")
    long = body.model_copy(update={"scalar_parts": {"r": ScalarPart(value_from="resource")}})
    assert render_scalar_parts(long, symbols(resource="x" * 1024)) == (("r", "x" * 1024),)
    for bad in ("x" * 1025, "a\nb", " lead", "caf\u00e9"):
        with pytest.raises(RenderError) as refused:
            render_scalar_parts(long, symbols(resource=bad))
        assert refused.value.code == "render.invalid_value"


def test_missing_and_unknown_symbols() -> None:
    with pytest.raises(RenderError) as refused:
        symbols().value("receipt.id")
    assert refused.value.code == "render.bad_symbol"
    assert symbols().value("delivery_key") == "dk_1"
    spec = BATCHES.request.model_copy(update={"query": {"k": "{delivery_key}"}})
    assert render_path_and_query(spec, symbols()).endswith("?k=dk_1")
