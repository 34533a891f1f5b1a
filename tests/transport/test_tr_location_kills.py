"""Kill tests for sink/transport/location.py (mutation gate, tools/mutation): the exact length
bound, the http default port, and that only space and backslash (not other ASCII) are refused."""

from __future__ import annotations

import pytest

from sink.transport.location import LocationRefused, accept_location

HTTPS = "https://receiver.example.test"
HTTP = "http://receiver.example.test"  # a plaintext binding, as check_authority allows for http
ALLOWED = ("/v1/jobs/{receipt.id}",)


def _reason(value: str, authority: str = HTTPS) -> str | None:
    try:
        accept_location(value, authority=authority, allowed_paths=ALLOWED)
    except LocationRefused as refused:
        return refused.reason
    return None


def test_the_length_bound_is_exactly_2048_characters() -> None:
    at_bound = "/v1/jobs/" + "a" * (2048 - len("/v1/jobs/"))
    assert len(at_bound) == 2048
    assert _reason(at_bound) == "path_not_allowlisted"  # measured, not refused for its length
    assert _reason(at_bound + "a") == "too_long"


@pytest.mark.parametrize(("value", "reason"), [
    ("http://receiver.example.test/v1/jobs/j1", None),
    ("http://receiver.example.test:80/v1/jobs/j1", None),
    ("http://receiver.example.test:81/v1/jobs/j1", "port_changed"),
    ("http://receiver.example.test:443/v1/jobs/j1", "port_changed"),
])
def test_http_binding_defaults_to_port_80(value: str, reason: str | None) -> None:
    assert _reason(value, HTTP) == reason


def test_https_binding_is_not_port_80() -> None:
    assert _reason("https://receiver.example.test:80/v1/jobs/j1") == "port_changed"


def test_ordinary_ascii_letters_are_not_refused_characters() -> None:
    accepted = accept_location("/v1/jobs/XJOB_X", authority=HTTPS, allowed_paths=ALLOWED)
    assert dict(accepted.receipt) == {"id": "XJOB_X"}
    assert _reason("/v1/jobs/a b") == "invalid_characters"
    assert _reason("/v1/jobs/a\\b") == "invalid_characters"
