"""Each auth method over verified TLS against an in-test HTTPS listener (trustme CA), and the TLS
refusals: an untrusted server, a wrong, expired or missing client certificate, a wrong key
passphrase. Secrets are sentinels that must reach the peer only in their one header."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme
from sec_server import Gateway, Pki, TlsListener, eventually
from sec_support import SENTINELS, TIMEOUTS, binding, policies, post

from sink.contracts.transport import FailureKind, SendCertainty
from sink.security.errors import SecurityRefusal
from sink.security.wire import open_binding_transport
from sink.transport import default_registry

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def listeners() -> Iterator[list[TlsListener]]:
    opened: list[TlsListener] = []
    yield opened
    for listener in opened:
        listener.close()


def _environ(tmp_path: Path) -> dict[str, str]:
    return {"TOKEN": SENTINELS["token"], "KEY": SENTINELS["api_key"], "BASIC": f"svc:{SENTINELS['password']}",
            "SECRET": SENTINELS["client_secret"], "PASS": SENTINELS["passphrase"]}


def _method_setup(method: str, pki: Pki, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """(what the gateway expects, binding fields) for one method."""
    if method == "bearer":
        return SENTINELS["token"], {"credential_ref": "env://TOKEN"}
    if method == "api_key_header":
        return f"X-Api-Key={SENTINELS['api_key']}", {"credential_ref": "env://KEY", "api_key_header": "X-Api-Key"}
    if method == "basic":
        return f"svc:{SENTINELS['password']}", {"credential_ref": "env://BASIC"}
    if method == "oauth2_client_credentials":
        return f"client-1:{SENTINELS['client_secret']}", {"credential_ref": "env://SECRET",
                                                          "oauth_client_id": "client-1"}
    cert, key = pki.client_files("client-a", pki.ca.issue_cert("client-a@example.test", common_name="client-a"),
                                 passphrase=SENTINELS["passphrase"].encode())
    return "client-a", {"credential_ref": f"file://{key}", "client_certificate_ref": f"file://{cert}",
                        "client_key_passphrase_ref": "env://PASS"}


@pytest.mark.parametrize("method", ["bearer", "api_key_header", "basic", "oauth2_client_credentials", "mtls"])
def test_each_method_authenticates_over_verified_tls(method: str, pki: Pki, tmp_path: Path,
                                                     listeners: list[TlsListener],
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    expected, fields = _method_setup(method, pki, tmp_path)
    gateway = Gateway(method, expected)
    listener = TlsListener(pki, gateway, require_client_cert=method == "mtls")
    listeners.append(listener)
    if method == "oauth2_client_credentials":
        fields["oauth_token_endpoint"] = f"{listener.url}/oauth/token"
    wire = open_binding_transport(binding(listener.url, method, **fields), timeouts=TIMEOUTS,
                                  policies=policies(tmp_path / "policies", pki),
                                  resolver=default_registry(_environ(tmp_path)))
    try:
        outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()
    assert outcome.response is not None and outcome.response.status == 200, outcome
    assert gateway.refused == 0
    mutation = listener.seen[-1]
    assert mutation.path == "/mock/v1/items"
    if method == "mtls":
        assert mutation.peer_subject is not None and "commonName=client-a" in mutation.peer_subject
        assert "authorization" not in mutation.headers
    if method == "oauth2_client_credentials":
        assert [s.path for s in listener.seen] == ["/oauth/token", "/mock/v1/items"]
        assert mutation.headers["authorization"] == f"Bearer {gateway.issued[0]}"
    text = repr(outcome) + caplog.text
    for name, sentinel in SENTINELS.items():
        assert sentinel not in text, name
        issued = gateway.issued[0] if gateway.issued else sentinel
        assert issued not in text


def test_a_server_the_policy_does_not_trust_gets_no_request(tmp_path: Path, pki: Pki,
                                                            listeners: list[TlsListener]) -> None:
    stranger = Pki(tmp_path / "stranger")
    listener = TlsListener(stranger, Gateway("bearer", SENTINELS["token"]))
    listeners.append(listener)
    for store in (policies(tmp_path / "policies", pki), None):
        chosen = store or policies(tmp_path / "system", pki)
        bound = binding(listener.url, "bearer", credential_ref="env://TOKEN",
                        **({} if store else {"tls_policy_ref": "loopback-plaintext@1"}))
        wire = open_binding_transport(bound, timeouts=TIMEOUTS, policies=chosen,
                                      resolver=default_registry(_environ(tmp_path)))
        try:
            outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
        finally:
            wire.close()
        assert outcome.evidence.failure is FailureKind.TLS_ERROR
        assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
        assert outcome.evidence.request_bytes_to_kernel == 0
    assert eventually(lambda: listener.handshake_failures == 2) and listener.seen == []


def _mtls_send(pki: Pki, listener: TlsListener, tmp_path: Path, cert: Path, key: Path) -> Any:
    wire = open_binding_transport(
        binding(listener.url, "mtls", credential_ref=f"file://{key}", client_certificate_ref=f"file://{cert}"),
        timeouts=TIMEOUTS, policies=policies(tmp_path / "policies", pki), resolver=default_registry({}))
    try:
        return wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()


def test_mtls_wrong_expired_or_no_client_certificate_is_refused_by_the_receiver(
        pki: Pki, tmp_path: Path, listeners: list[TlsListener]) -> None:
    listener = TlsListener(pki, Gateway("mtls", "client-a"), require_client_cert=True)
    listeners.append(listener)
    good = pki.client_files("good", pki.ca.issue_cert("good@example.test", common_name="client-a"))
    assert _mtls_send(pki, listener, tmp_path, *good).response.status == 200  # the control
    other_ca = trustme.CA()
    wrong = pki.client_files("wrong", other_ca.issue_cert("wrong@example.test", common_name="client-a"))
    past = datetime.now(UTC) - timedelta(days=2)
    expired = pki.client_files("expired", pki.ca.issue_cert("old@example.test", common_name="client-a",
                                                             not_before=past - timedelta(days=30), not_after=past))
    for cert, key in (wrong, expired):
        outcome = _mtls_send(pki, listener, tmp_path, cert, key)
        assert outcome.response is None
        assert outcome.evidence.failure in (FailureKind.TLS_ERROR, FailureKind.READ_ERROR,
                                            FailureKind.CONNECTION_CLOSED, FailureKind.WRITE_ERROR)
    assert eventually(lambda: listener.handshake_failures == 2) and len(listener.seen) == 1
    # Without a client certificate at all (a bearer binding to the same listener): refused too.
    wire = open_binding_transport(binding(listener.url, "bearer", credential_ref="env://TOKEN"), timeouts=TIMEOUTS,
                                  policies=policies(tmp_path / "policies", pki),
                                  resolver=default_registry(_environ(tmp_path)))
    try:
        assert wire.transport.send(post(), timeouts=TIMEOUTS).response is None
    finally:
        wire.close()
    assert len(listener.seen) == 1


def test_an_unloadable_client_identity_refuses_before_connecting(pki: Pki, tmp_path: Path,
                                                                 listeners: list[TlsListener]) -> None:
    listener = TlsListener(pki, Gateway("mtls", "client-a"), require_client_cert=True)
    listeners.append(listener)
    cert, key = pki.client_files("locked", pki.ca.issue_cert("locked@example.test", common_name="client-a"),
                                 passphrase=SENTINELS["passphrase"].encode())
    other_cert, _ = pki.client_files("other", pki.ca.issue_cert("other@example.test", common_name="other"))
    cases = [
        ({"client_key_passphrase_ref": "env://WRONG"}, cert, key),  # wrong passphrase
        ({}, cert, key),  # encrypted key, no passphrase (OpenSSL would prompt on a terminal: it must not)
        ({"client_key_passphrase_ref": "env://PASS"}, other_cert, key),  # key does not match the certificate
        ({}, cert, tmp_path / "missing.key"),
    ]
    environ = {"PASS": SENTINELS["passphrase"], "WRONG": "not-the-passphrase"}
    for extra, chain, private in cases:
        bound = binding(listener.url, "mtls", credential_ref=f"file://{private}",
                        client_certificate_ref=f"file://{chain}", **extra)
        with pytest.raises(SecurityRefusal) as refused:
            open_binding_transport(bound, timeouts=TIMEOUTS, policies=policies(tmp_path / "policies", pki),
                                   resolver=default_registry(environ))
        assert refused.value.code == "transport.tls.client_identity_unloadable"
        message = str(refused.value)
        assert SENTINELS["passphrase"] not in message and str(private) not in message
        assert refused.value.__cause__ is None and refused.value.__suppress_context__
        assert "PRIVATE KEY" not in message
    assert listener.connections == 0
