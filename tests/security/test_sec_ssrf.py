"""Authority fixed: a redirect to another port or host is never followed, a DNS answer outside the
network policy is never connected to, an OAuth token endpoint on a foreign origin is refused, and
in each case the second listener (where a credential would have gone) received nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sec_server import Gateway, Pki, TlsListener, fixed
from sec_support import SENTINELS, TIMEOUTS, binding, policies, post

from sink.contracts.transport import FailureKind, SendCertainty
from sink.security.errors import SecurityRefusal
from sink.security.wire import open_binding_transport
from sink.transport import default_registry

pytestmark = pytest.mark.timeout(120)
ENVIRON = {"TOKEN": SENTINELS["token"], "SECRET": SENTINELS["client_secret"]}


@pytest.fixture
def listeners() -> Iterator[list[TlsListener]]:
    opened: list[TlsListener] = []
    yield opened
    for listener in opened:
        listener.close()


def _no_credential_reached(listener: TlsListener) -> None:
    assert listener.connections == 0 and listener.seen == []
    for sentinel in SENTINELS.values():
        assert sentinel.encode() not in listener.raw


@pytest.mark.parametrize("target", ["other_port", "other_host"])
def test_a_redirect_is_evidence_and_never_followed(target: str, pki: Pki, tmp_path: Path,
                                                   listeners: list[TlsListener]) -> None:
    elsewhere = TlsListener(pki, Gateway("bearer", SENTINELS["token"]))
    host = "localhost" if target == "other_port" else "127.0.0.1"
    location = f"https://{host}:{elsewhere.port}/mock/v1/items"
    origin = TlsListener(pki, fixed(307, headers=(("location", location),)))
    listeners.extend([elsewhere, origin])
    wire = open_binding_transport(binding(origin.url, "bearer", credential_ref="env://TOKEN"), timeouts=TIMEOUTS,
                                  policies=policies(tmp_path, pki), resolver=default_registry(ENVIRON))
    try:
        outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()
    assert outcome.response is not None and outcome.response.status == 307
    assert outcome.response.headers["location"] == location
    assert len(origin.seen) == 1
    _no_credential_reached(elsewhere)


def test_a_dns_answer_outside_the_allowlist_is_never_connected_to(pki: Pki, tmp_path: Path,
                                                                  listeners: list[TlsListener]) -> None:
    # The rebinding target: a listener on 127.0.0.1, while the policy allows only 127.0.0.2.
    target = TlsListener(pki, Gateway("bearer", SENTINELS["token"]))
    listeners.append(target)
    answers = iter(["127.0.0.1", "::ffff:127.0.0.1"])

    def rebinding(host: str, port: int) -> str:
        return next(answers)

    for _ in range(2):
        store = policies(tmp_path / "narrow", pki, networks=("127.0.0.2/32",))
        wire = open_binding_transport(binding(target.url, "bearer", credential_ref="env://TOKEN"), timeouts=TIMEOUTS,
                                      policies=store, resolver=default_registry(ENVIRON), dns_resolver=rebinding)
        try:
            outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
        finally:
            wire.close()
        assert outcome.evidence.failure is FailureKind.AUTHORITY_REFUSED
        assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
        assert outcome.evidence.request_bytes_to_kernel == 0
    _no_credential_reached(target)
    # The control: the same answer under a policy that allows it reaches the listener.
    wire = open_binding_transport(binding(target.url, "bearer", credential_ref="env://TOKEN"), timeouts=TIMEOUTS,
                                  policies=policies(tmp_path / "wide", pki, networks=("127.0.0.1/32",)),
                                  resolver=default_registry(ENVIRON), dns_resolver=lambda host, port: "127.0.0.1")
    try:
        assert wire.transport.send(post(), timeouts=TIMEOUTS).response is not None
    finally:
        wire.close()
    assert len(target.seen) == 1


def test_an_ip_literal_authority_is_checked_too(pki: Pki, tmp_path: Path, listeners: list[TlsListener]) -> None:
    target = TlsListener(pki, Gateway("bearer", SENTINELS["token"]))
    listeners.append(target)
    wire = open_binding_transport(binding(f"https://127.0.0.1:{target.port}", "bearer", credential_ref="env://TOKEN"),
                                  timeouts=TIMEOUTS, policies=policies(tmp_path, pki, networks=("10.0.0.0/8",)),
                                  resolver=default_registry(ENVIRON))
    try:
        assert wire.transport.send(post(), timeouts=TIMEOUTS).evidence.failure is FailureKind.AUTHORITY_REFUSED
    finally:
        wire.close()
    _no_credential_reached(target)


def _oauth(authority: str, endpoint: str) -> dict[str, str]:
    return {"credential_ref": "env://SECRET", "oauth_client_id": "client-1", "oauth_token_endpoint": endpoint}


def test_a_foreign_token_endpoint_is_refused_unless_the_network_policy_names_it(
        pki: Pki, tmp_path: Path, listeners: list[TlsListener]) -> None:
    issuer = TlsListener(pki, Gateway("oauth2_client_credentials", f"client-1:{SENTINELS['client_secret']}"))
    api = TlsListener(pki, fixed(200))
    listeners.extend([issuer, api])
    foreign = _oauth(api.url, f"{issuer.url}/oauth/token")
    with pytest.raises(SecurityRefusal) as refused:
        open_binding_transport(binding(api.url, "oauth2_client_credentials", **foreign), timeouts=TIMEOUTS,
                               policies=policies(tmp_path / "plain", pki), resolver=default_registry(ENVIRON))
    assert refused.value.code == "transport.auth.token_endpoint_not_allowed"
    _no_credential_reached(issuer)
    store = policies(tmp_path / "allow", pki, token_origins=(issuer.url,))
    wire = open_binding_transport(binding(api.url, "oauth2_client_credentials", **foreign), timeouts=TIMEOUTS,
                                  policies=store, resolver=default_registry(ENVIRON))
    try:
        assert wire.transport.send(post(), timeouts=TIMEOUTS).response is not None
    finally:
        wire.close()
    assert [s.path for s in issuer.seen] == ["/oauth/token"] and len(api.seen) == 1


def test_a_redirected_token_request_sends_no_secret_onward(pki: Pki, tmp_path: Path,
                                                           listeners: list[TlsListener]) -> None:
    elsewhere = TlsListener(pki, Gateway("oauth2_client_credentials", f"client-1:{SENTINELS['client_secret']}"))
    origin = TlsListener(pki, fixed(302, headers=(("location", f"{elsewhere.url}/oauth/token"),)))
    listeners.extend([elsewhere, origin])
    bound = binding(origin.url, "oauth2_client_credentials", **_oauth(origin.url, f"{origin.url}/oauth/token"))
    wire = open_binding_transport(bound, timeouts=TIMEOUTS, policies=policies(tmp_path, pki),
                                  resolver=default_registry(ENVIRON))
    try:
        outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()
    assert outcome.evidence.failure is FailureKind.CREDENTIAL_UNAVAILABLE
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
    assert [s.path for s in origin.seen] == ["/oauth/token"]  # the mutation itself was never sent
    _no_credential_reached(elsewhere)
