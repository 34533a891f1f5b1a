"""The auth gate's rules one by one (no server): mTLS subject checks, scheme parsing, exempt paths,
secret-source bounds, the TLS extension built from a connection."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
from mr_auth_support import SUMMARY
from mr_support import behaviour_with, client_for
from starlette.datastructures import Headers

from mock_receiver.auth import AuthGate, AuthMiddleware
from mock_receiver.auth_spec import BearerAuth, MutualTlsAuth, OAuthClientCredentialsAuth
from mock_receiver.behaviour import BehaviourError, parse_behaviour
from mock_receiver.secret_sources import MAX_SECRET_BYTES, AuthConfigError, read_file_secret
from mock_receiver.tls_peer import tls_extension

NO_HEADERS = Headers(headers={})


def _peer(common_name: str | None, *alt: tuple[str, str]) -> dict[str, object]:
    subject = (((("countryName", "ZZ"),), (("commonName", common_name),)) if common_name
               else ((("organizationName", "x"),),))
    return {"client_cert_chain": ["-----BEGIN CERTIFICATE-----"], "client_cert_dict": {
        "subject": subject, "subjectAltName": alt}}


def _slug(gate: AuthGate, tls: dict[str, object] | None, headers: Headers = NO_HEADERS) -> str | None:
    problem = gate.check(headers, tls)
    return None if problem is None else f"{problem.status} {problem.slug}"


def test_mtls_subject_cn() -> None:
    gate = AuthGate(MutualTlsAuth(method="mtls", subject_cn="sink-a"))
    assert _slug(gate, _peer("sink-a")) is None
    assert _slug(gate, _peer("sink-b")) == "403 forbidden_principal"
    assert _slug(gate, _peer("sink-a-longer")) == "403 forbidden_principal"
    assert _slug(gate, _peer(None)) == "403 forbidden_principal"
    assert _slug(gate, _peer("x", ("DNS", "sink-a"))) == "403 forbidden_principal"  # a SAN is not the CN
    no_certs: list[dict[str, object] | None] = [None, {}, {"client_cert_chain": [], "client_cert_dict": None},
                                                {"client_cert_dict": {}}]
    for no_cert in no_certs:
        assert _slug(gate, no_cert) == "401 client_certificate_required"
    assert gate.counters.accepted == 1
    assert gate.counters.refused == {"forbidden_principal": 4, "client_certificate_required": 4}


def test_mtls_subject_san_and_both() -> None:
    san = AuthGate(MutualTlsAuth(method="mtls", subject_san="loader.test"))
    assert _slug(san, _peer("anything", ("DNS", "other.test"), ("DNS", "loader.test"))) is None
    assert _slug(san, _peer("loader.test")) == "403 forbidden_principal"  # a CN is not a SAN
    assert _slug(san, _peer("x", ("email", "loader.test@x"))) == "403 forbidden_principal"
    both = AuthGate(MutualTlsAuth(method="mtls", subject_cn="a", subject_san="b.test"))
    assert _slug(both, _peer("a", ("DNS", "b.test"))) is None
    assert _slug(both, _peer("a", ("DNS", "c.test"))) == "403 forbidden_principal"
    assert _slug(both, _peer("c", ("DNS", "b.test"))) == "403 forbidden_principal"


def test_the_authorization_scheme_is_case_insensitive_and_must_match(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_GATE_TOKEN", "t0ken")
    gate = AuthGate(BearerAuth(method="bearer", token_env="MR_GATE_TOKEN"))
    for value in ("Bearer t0ken", "bearer t0ken", "BEARER  t0ken ", " Bearer t0ken"):
        assert _slug(gate, None, Headers(headers={"Authorization": value})) is None, value
    for value in ("Bearert0ken", "Basic t0ken", "t0ken"):
        assert _slug(gate, None, Headers(headers={"Authorization": value})) == "401 authentication_required"
    assert _slug(gate, None, Headers(headers={"Authorization": "Bearer T0KEN"})) == "401 invalid_credentials"


def test_an_oauth_client_with_a_new_secret_drops_the_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_GATE_SECRET", "one")
    spec = OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="c",
                                      client_secret_env="MR_GATE_SECRET")
    gate = AuthGate(spec)
    token = gate.tokens.issue(60, frozenset())
    gate.configure(spec)
    assert gate.tokens.lookup(token)[1] is True
    monkeypatch.setenv("MR_GATE_SECRET", "two")
    gate.configure(spec)
    assert gate.tokens.lookup(token) == (None, False)


def test_a_failed_configure_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_GATE_TOKEN", "t0ken")
    gate = AuthGate(BearerAuth(method="bearer", token_env="MR_GATE_TOKEN"))
    with pytest.raises(AuthConfigError):
        gate.configure(BearerAuth(method="bearer", token_env="MR_GATE_UNSET_VARIABLE"))
    assert _slug(gate, None, Headers(headers={"Authorization": "Bearer t0ken"})) is None


def test_only_the_admin_prefix_and_the_token_endpoint_are_exempt(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_GATE_TOKEN", "t0ken")
    with client_for(behaviour_with("dataset-jobs", auth={"method": "bearer", "token_env": "MR_GATE_TOKEN"}),
                    tmp_path / "state") as client:
        for path in ("/_adminx", "/_admin_/health", "/oauth/token/x", "/oauth", "/openapi.json", SUMMARY):
            assert client.get(path).status_code == 401, path
        assert client.get("/_admin/health").status_code == 200
        assert client.get("/_admin").status_code == 404  # exempt, and simply not a route
        assert client.post("/oauth/token").status_code == 404  # exempt; bearer issues no tokens


def test_schema_rules() -> None:
    base = behaviour_with("dataset-jobs").model_dump(mode="json")
    bad: list[dict[str, Any]] = [
        {"method": "oauth2_client_credentials", "client_id": "c", "client_secret_env": "S", "scopes": ["a"],
         "required_scope": "b"},
        {"method": "oauth2_client_credentials", "client_id": "c", "client_secret_env": "S", "token_ttl_seconds": 0},
        {"method": "oauth2_client_credentials", "client_id": "c", "client_secret_env": "S", "scopes": ['a"b']},
        {"method": "api_key_header", "header": "cookie", "key_env": "K"},
        {"method": "api_key_header", "header": "Idempotency-Key", "key_env": "K"},
        {"method": "api_key_header", "header": "X Key", "key_env": "K"},
        {"method": "bearer", "token_env": "1BAD"},
        {"method": "basic", "username": "", "password_env": "P"},
        {"method": "mtls", "subject_cn": ""},
    ]
    for auth in bad:
        with pytest.raises(BehaviourError):
            parse_behaviour({**base, "auth": auth})
    good = parse_behaviour({**base, "auth": {"method": "oauth2_client_credentials", "client_id": "c",
                                             "client_secret_file": "/s", "scopes": ["a"], "required_scope": "a"}})
    assert good.auth.method == "oauth2_client_credentials"
    assert parse_behaviour(base).auth.method == "none"


def test_a_secret_file_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"x" * MAX_SECRET_BYTES)
    assert len(read_file_secret(str(path))) == MAX_SECRET_BYTES
    path.write_bytes(b"x" * (MAX_SECRET_BYTES + 1))
    with pytest.raises(AuthConfigError, match="larger than"):
        read_file_secret(str(path))
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(AuthConfigError, match="not UTF-8"):
        read_file_secret(str(path))


class _FakeSsl:
    def __init__(self, der: bytes, parsed: dict[str, object], version: str) -> None:
        self.der, self.parsed, self._version = der, parsed, version

    def getpeercert(self, binary_form: bool = False) -> object:
        return self.der if binary_form else self.parsed

    def version(self) -> str:
        return self._version


def test_the_tls_extension_of_a_connection() -> None:
    assert tls_extension(None) is None
    parsed = {"subject": ((("commonName", "a"),),)}
    der = b"\x30\x03\x02\x01\x01"  # the bytes are only carried, never parsed, here
    with_cert = tls_extension(_FakeSsl(der, parsed, "TLSv1.3"))  # type: ignore[arg-type]
    assert with_cert is not None
    assert with_cert["client_cert_dict"] == parsed and with_cert["tls_version"] == 0x0304
    assert with_cert["client_cert_chain"] == [ssl.DER_cert_to_PEM_cert(der)]
    without = tls_extension(_FakeSsl(b"", {}, "TLSv1.2"))  # type: ignore[arg-type]
    assert without is not None
    assert without["client_cert_chain"] == [] and without["client_cert_dict"] is None
    assert without["tls_version"] == 0x0303



class _Holder:
    def __init__(self, gate: AuthGate, max_body_bytes: int) -> None:
        self.auth = gate
        self.behaviour = behaviour_with("dataset-jobs", limits={"max_body_bytes": max_body_bytes})


def _run_refused(chunks: int, chunk_size: int, max_body_bytes: int) -> tuple[int, list[str]]:
    """(body messages the middleware consumed, events in order) for an unauthenticated POST."""
    events: list[str] = []
    consumed = 0

    async def receive() -> dict[str, object]:
        nonlocal consumed
        consumed += 1
        events.append("body")
        return {"type": "http.request", "body": b"x" * chunk_size, "more_body": consumed < chunks}

    async def send(message: dict[str, object]) -> None:
        events.append(str(message["type"]))

    async def never(*_: object) -> None:
        raise AssertionError("a refused request must not reach the application")

    gate = AuthGate(BearerAuth(method="bearer", token_env="MR_GATE_TOKEN"))
    middleware = AuthMiddleware(never, _Holder(gate, max_body_bytes))  # type: ignore[arg-type]
    scope = {"type": "http", "method": "POST", "path": "/mock/v1/resources/measurements/batches",
             "headers": [(b"content-length", str(chunks * chunk_size).encode())]}
    asyncio.run(middleware(scope, receive, send))  # type: ignore[arg-type]
    return consumed, events


def test_a_refused_body_is_drained_before_the_answer_up_to_the_body_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_GATE_TOKEN", "t0ken")
    consumed, events = _run_refused(chunks=5, chunk_size=1000, max_body_bytes=16_000)
    assert consumed == 5
    assert events[:6] == ["body"] * 5 + ["http.response.start"]
    # Past the limit it stops reading (the connection then closes), and still answers 401.
    consumed, events = _run_refused(chunks=100, chunk_size=1000, max_body_bytes=4096)
    assert consumed == 5
    assert "http.response.start" in events
