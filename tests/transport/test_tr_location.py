"""Location / Operation-Location acceptance (pure): same origin after canonicalisation and an
allowlisted receipt path, or a stable refusal."""

from __future__ import annotations

import pytest

from sink.transport.location import MAX_LOCATION_LENGTH, LocationRefused, accept_location

AUTHORITY = "https://receiver.example.test"
ALLOWED = ("/v1/jobs/{receipt.id}", "/v1/batches/{receipt.batch}/status")


@pytest.mark.parametrize(
    ("value", "path", "receipt"),
    [
        ("/v1/jobs/job_1", "/v1/jobs/job_1", {"id": "job_1"}),
        ("https://receiver.example.test/v1/jobs/j-2", "/v1/jobs/j-2", {"id": "j-2"}),
        ("HTTPS://Receiver.Example.Test:443/v1/jobs/j.3~x", "/v1/jobs/j.3~x", {"id": "j.3~x"}),
        ("//receiver.example.test/v1/jobs/j4", "/v1/jobs/j4", {"id": "j4"}),
        ("/v1/batches/b7/status", "/v1/batches/b7/status", {"batch": "b7"}),
    ],
)
def test_accepted(value: str, path: str, receipt: dict[str, str]) -> None:
    accepted = accept_location(value, authority=AUTHORITY, allowed_paths=ALLOWED)
    assert accepted.path == path
    assert dict(accepted.receipt) == receipt


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("http://receiver.example.test/v1/jobs/j1", "scheme_changed"),
        ("ftp://receiver.example.test/v1/jobs/j1", "scheme_changed"),
        ("javascript:alert(1)", "scheme_changed"),
        ("https://evil.example.test/v1/jobs/j1", "authority_changed"),
        ("https://receiver.example.test./v1/jobs/j1", "authority_changed"),
        ("https://receiver.example.test.evil.test/v1/jobs/j1", "authority_changed"),
        ("https://10.0.0.1/v1/jobs/j1", "authority_changed"),
        ("//evil.example.test/v1/jobs/j1", "authority_changed"),
        ("https://receiver.example.test:8443/v1/jobs/j1", "port_changed"),
        ("https://receiver.example.test:99999/v1/jobs/j1", "port_changed"),
        ("https://user:pw@receiver.example.test/v1/jobs/j1", "userinfo"),
        ("https://receiver.example.test@evil.test/v1/jobs/j1", "userinfo"),
        ("/v1/jobs/j1#frag", "fragment"),
        ("/v1/jobs/j1?next=https://evil", "query"),
        ("/v1/jobs/j1?", "query"),
        ("v1/jobs/j1", "relative_reference"),
        ("/v1/jobs/../admin", "path_escape"),
        ("/v1/jobs/./j1", "path_escape"),
        ("/v1/jobs/%2e%2e", "path_escape"),
        ("/v1/jobs/a%2Fb", "path_escape"),
        ("/v1//jobs/j1", "path_escape"),
        ("/v1/jobs/j1/", "path_escape"),
        ("/v1\\jobs/j1", "invalid_characters"),
        ("/v1/jobs/j 1", "invalid_characters"),
        ("/v1/jobs/j\r\n1", "invalid_characters"),
        ("/v1/jobs/j\u00e91", "invalid_characters"),
        ("/v1/jobs/j\u200b1", "invalid_characters"),
        ("/v1/jobs/j\x7f", "invalid_characters"),
        ("/v1/jobs/" + "a" * MAX_LOCATION_LENGTH, "too_long"),
        ("/v1/other/j1", "path_not_allowlisted"),
        ("/v1/jobs/j1/extra", "path_not_allowlisted"),
        ("/v1/jobs/j%41", "path_not_allowlisted"),
        ("/v1/batches/b1/other", "path_not_allowlisted"),
    ],
)
def test_refused(value: str, reason: str) -> None:
    with pytest.raises(LocationRefused) as refused:
        accept_location(value, authority=AUTHORITY, allowed_paths=ALLOWED)
    assert refused.value.reason == reason
    assert value not in str(refused.value) or value == "v1/jobs/j1"


def test_explicit_port_of_the_binding_and_local_http() -> None:
    local = "http://127.0.0.1:8080"
    accepted = accept_location("http://127.0.0.1:8080/v1/jobs/j", authority=local, allowed_paths=ALLOWED)
    assert accepted.path == "/v1/jobs/j"
    for value, reason in (("http://127.0.0.1/v1/jobs/j", "port_changed"),
                          ("http://localhost:8080/v1/jobs/j", "authority_changed"),
                          ("https://127.0.0.1:8080/v1/jobs/j", "scheme_changed")):
        with pytest.raises(LocationRefused) as refused:
            accept_location(value, authority=local, allowed_paths=ALLOWED)
        assert refused.value.reason == reason


def test_length_bound_is_inclusive() -> None:
    value = "/v1/jobs/" + "a" * (MAX_LOCATION_LENGTH - len("/v1/jobs/"))
    long_allowed = ("/v1/jobs/{receipt.id}",)
    with pytest.raises(LocationRefused) as refused:  # too long for a receipt value, but not for the header
        accept_location(value, authority=AUTHORITY, allowed_paths=long_allowed)
    assert refused.value.reason == "path_not_allowlisted"


def test_no_allowlist_accepts_nothing() -> None:
    with pytest.raises(LocationRefused) as refused:
        accept_location("/v1/jobs/j", authority=AUTHORITY, allowed_paths=())
    assert refused.value.reason == "path_not_allowlisted"
