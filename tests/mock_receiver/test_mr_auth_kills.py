"""The auth gate's decisions, one rule per test, through AuthMiddleware as a server drives it (and the
gate's public configure / oauth_client / counters): every refusal's exact answer (status, problem
document, WWW-Authenticate challenge, per docs/mock-receiver.md and RFC 6750), which credential opens
the data API for each method, and what a switch of method keeps."""

from __future__ import annotations

import base64

import pytest
from mr_auth_gate_support import Answer, ask, peer

from mock_receiver.auth import AuthGate
from mock_receiver.auth_spec import (
    ApiKeyAuth,
    BasicAuth,
    BearerAuth,
    MutualTlsAuth,
    NoAuth,
    OAuthClientCredentialsAuth,
)
from mock_receiver.secret_sources import AuthConfigError

TOKEN, API_KEY, PASSWORD, CLIENT_SECRET = "kill-token-1", "kill-key-2", "kill-password-3", "kill-secret-4"
BEARER = BearerAuth(method="bearer", token_env="MR_KILL_TOKEN")
API_KEY_AUTH = ApiKeyAuth(method="api_key_header", header="X-Upload-Key", key_env="MR_KILL_KEY")
BASIC = BasicAuth(method="basic", username="loader", password_env="MR_KILL_PASSWORD")
OAUTH = OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="sink",
                                   client_secret_env="MR_KILL_SECRET", required_scope="ingest")
OAUTH_ANY_SCOPE = OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="sink",
                                             client_secret_env="MR_KILL_SECRET")
MTLS_CN = MutualTlsAuth(method="mtls", subject_cn="sink-a")
MTLS_SAN = MutualTlsAuth(method="mtls", subject_san="loader.test")
REALM = 'realm="mock-receiver"'


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("MR_KILL_TOKEN", TOKEN), ("MR_KILL_KEY", API_KEY), ("MR_KILL_PASSWORD", PASSWORD),
                        ("MR_KILL_SECRET", CLIENT_SECRET)):
        monkeypatch.setenv(name, value)


def _basic(pair: bytes) -> tuple[str, str]:
    return ("Authorization", "Basic " + base64.b64encode(pair).decode())


def _refused(answer: Answer, status: int, slug: str, detail: str, challenge: str) -> None:
    assert not answer.reached
    assert answer.status == status
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["www-authenticate"] == challenge
    assert answer.problem == {"type": f"urn:restproof:mock-receiver:problem:{slug}",
                              "title": {401: "Unauthorized", 403: "Forbidden"}[status], "status": status,
                              "detail": detail}


def test_bearer_refusals_are_the_documented_answers() -> None:
    gate = AuthGate(BEARER)
    assert ask(gate, [("Authorization", f"Bearer {TOKEN}")]).reached
    _refused(ask(gate), 401, "authentication_required", "a bearer token is required", f"Bearer {REALM}")
    _refused(ask(gate, [("Authorization", f"Bearer {TOKEN}x")]), 401, "invalid_credentials",
             "the bearer token is not valid", f'Bearer {REALM}, error="invalid_token"')


@pytest.mark.parametrize("secret", [TOKEN, "XXXX"])  # XXXX: whatever the secret, two headers are ambiguous
def test_two_authorization_headers_are_refused_even_when_both_carry_the_secret(
        monkeypatch: pytest.MonkeyPatch, secret: str) -> None:
    monkeypatch.setenv("MR_KILL_TOKEN", secret)
    gate = AuthGate(BEARER)
    header = ("Authorization", f"Bearer {secret}")
    assert ask(gate, [header]).reached
    _refused(ask(gate, [header, header]), 401, "invalid_credentials", "the bearer token is not valid",
             f'Bearer {REALM}, error="invalid_token"')
    _refused(ask(gate, [header, ("Authorization", "Bearer other")]), 401, "invalid_credentials",
             "the bearer token is not valid", f'Bearer {REALM}, error="invalid_token"')


def test_api_key_refusals_are_the_documented_answers() -> None:
    gate = AuthGate(API_KEY_AUTH)
    challenge = f'ApiKey {REALM}, header="X-Upload-Key"'
    assert ask(gate, [("x-upload-key", API_KEY)]).reached
    _refused(ask(gate, [("X-API-Key", API_KEY)]), 401, "authentication_required",
             "an API key in the X-Upload-Key header is required", challenge)
    _refused(ask(gate, [("X-Upload-Key", API_KEY + "x")]), 401, "invalid_credentials", "the API key is not valid",
             challenge)
    for second in (API_KEY, "other"):  # two key headers are ambiguous even when the first is right
        _refused(ask(gate, [("X-Upload-Key", API_KEY), ("X-Upload-Key", second)]), 401, "invalid_credentials",
                 "the API key is not valid", challenge)


def test_basic_refusals_are_the_documented_answers() -> None:
    gate = AuthGate(BASIC)
    challenge = f'Basic {REALM}, charset="UTF-8"'
    assert ask(gate, [_basic(f"loader:{PASSWORD}".encode())]).reached
    _refused(ask(gate, [("Authorization", f"Bearer {PASSWORD}")]), 401, "authentication_required",
             "HTTP Basic credentials are required", challenge)
    wrong = [
        _basic(f"loader:{PASSWORD}x".encode()),  # wrong password
        _basic(f"other:{PASSWORD}".encode()),  # wrong user
        _basic(f"loader{PASSWORD}".encode()),  # no colon
        ("Authorization", "Basic !!!not-base64"),  # not base64 at all
        ("Authorization", "Basic " + base64.b64encode(f"loader:{PASSWORD}".encode()).decode()[:-1]),  # bad padding
        _basic(b"loader:\xff\xfe"),  # base64, but not UTF-8
    ]
    for header in wrong:
        _refused(ask(gate, [header]), 401, "invalid_credentials", "the Basic credentials are not valid", challenge)


def test_basic_base64_is_strict_characters_outside_the_alphabet_are_refused() -> None:
    gate = AuthGate(BASIC)
    encoded = base64.b64encode(f"loader:{PASSWORD}".encode()).decode()
    assert ask(gate, [("Authorization", "Basic " + encoded)]).reached
    for junk in (encoded[:4] + "*" + encoded[4:], encoded[:8] + " " + encoded[8:]):  # a lax decoder drops them
        _refused(ask(gate, [("Authorization", "Basic " + junk)]), 401, "invalid_credentials",
                 "the Basic credentials are not valid", f'Basic {REALM}, charset="UTF-8"')


def test_oauth_refusals_are_the_documented_answers() -> None:
    gate = AuthGate(OAUTH)
    with_scope = gate.tokens.issue(60, frozenset({"ingest", "read"}))
    without_scope = gate.tokens.issue(60, frozenset({"read"}))
    assert ask(gate, [("Authorization", f"Bearer {with_scope}")]).reached
    _refused(ask(gate), 401, "authentication_required", "an access token from /oauth/token is required",
             f"Bearer {REALM}")
    _refused(ask(gate, [("Authorization", "Bearer never-issued")]), 401, "invalid_credentials",
             "the access token is not valid", f'Bearer {REALM}, error="invalid_token"')
    _refused(ask(gate, [("Authorization", f"Bearer {without_scope}")]), 403, "insufficient_scope",
             "the access token lacks the scope ingest",
             f'Bearer {REALM}, error="insufficient_scope", scope="ingest"')
    gate.tokens.expire_all()
    _refused(ask(gate, [("Authorization", f"Bearer {with_scope}")]), 401, "token_expired",
             "the access token expired", f'Bearer {REALM}, error="invalid_token"')


def test_oauth_without_a_required_scope_accepts_a_token_with_no_scope() -> None:
    gate = AuthGate(OAUTH_ANY_SCOPE)
    token = gate.tokens.issue(60, frozenset())
    assert ask(gate, [("Authorization", f"Bearer {token}")]).reached


def test_mtls_refusals_are_the_documented_answers() -> None:
    challenge = f"MutualTLS {REALM}"
    cn, san = AuthGate(MTLS_CN), AuthGate(MTLS_SAN)
    assert ask(cn, tls=peer("sink-a")).reached
    assert ask(san, tls=peer(None, ("DNS", "other.test"), ("DNS", "loader.test"))).reached
    _refused(ask(cn, tls=peer("sink-b")), 403, "forbidden_principal",
             "the client certificate's subject is not the expected one", challenge)
    _refused(ask(san, tls=peer("loader.test")), 403, "forbidden_principal",
             "the client certificate's subjectAltName is not the expected one", challenge)
    no_certificate: list[object] = [None, {}, {"client_cert_dict": None}, {"client_cert_dict": {}},
                                    {"client_cert_dict": ["not", "a", "mapping"]}, {"client_cert_dict": "x"}]
    for tls in no_certificate:
        _refused(ask(cn, extensions={"tls": tls}), 401, "client_certificate_required",
                 "a client certificate verified by the receiver's client CA is required", challenge)


def test_mtls_with_both_subjects_needs_both() -> None:
    gate = AuthGate(MutualTlsAuth(method="mtls", subject_cn="sink-a", subject_san="loader.test"))
    assert ask(gate, tls=peer("sink-a", ("DNS", "loader.test"))).reached
    assert ask(gate, tls=peer("sink-a", ("DNS", "x.test"))).status == 403
    assert ask(gate, tls=peer("sink-b", ("DNS", "loader.test"))).status == 403


def test_the_counters_count_each_request_once_by_outcome_and_header() -> None:
    gate = AuthGate(BEARER)
    assert (gate.counters.accepted, gate.counters.with_authorization_header) == (0, 0)
    ask(gate, [("Authorization", f"Bearer {TOKEN}")])
    ask(gate, [("Authorization", f"Bearer {TOKEN}")])
    ask(gate, [("Authorization", "Bearer wrong")])
    ask(gate)
    ask(gate, [("X-Other", "1")])
    assert gate.counters.accepted == 2
    assert gate.counters.with_authorization_header == 3
    assert gate.counters.refused == {"invalid_credentials": 1, "authentication_required": 2}
    gate.counters.count_token_refusal("invalid_client")
    gate.counters.count_token_refusal("invalid_client")
    assert gate.counters.token_refused == {"invalid_client": 2}
    gate.counters.reset()
    assert (gate.counters.accepted, gate.counters.with_authorization_header) == (0, 0)
    assert gate.counters.refused == {} and gate.counters.token_refused == {}


def test_an_open_receiver_counts_the_authorization_headers_it_was_sent() -> None:
    gate = AuthGate(NoAuth(method="none"))
    assert ask(gate, [("Authorization", "Bearer leaked")]).reached
    assert ask(gate).reached
    assert (gate.counters.accepted, gate.counters.with_authorization_header) == (2, 1)


def test_oauth_tokens_are_kept_only_for_the_same_client_and_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = AuthGate(OAUTH_ANY_SCOPE)
    token = gate.tokens.issue(60, frozenset())
    gate.configure(OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="sink",
                                              client_secret_env="MR_KILL_SECRET", token_ttl_seconds=60))
    assert gate.tokens.lookup(token)[1] is True  # same client and secret: a tuning change keeps tokens
    gate.configure(OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="other-client",
                                              client_secret_env="MR_KILL_SECRET"))
    assert gate.tokens.lookup(token) == (None, False)  # another client, same secret
    kept = gate.tokens.issue(60, frozenset())
    monkeypatch.setenv("MR_KILL_SECRET", "rotated")
    gate.configure(OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="other-client",
                                              client_secret_env="MR_KILL_SECRET"))
    assert gate.tokens.lookup(kept) == (None, False)  # same client, new secret


def test_switching_between_oauth_and_another_method_both_ways() -> None:
    gate = AuthGate(BEARER)
    assert gate.oauth_client() == (None, None)
    gate.configure(OAUTH)
    assert gate.oauth_client() == (OAUTH, CLIENT_SECRET)
    token = gate.tokens.issue(60, frozenset({"ingest"}))
    assert ask(gate, [("Authorization", f"Bearer {token}")]).reached
    gate.configure(BEARER)
    assert gate.spec == BEARER and gate.oauth_client() == (None, None)
    assert ask(gate, [("Authorization", f"Bearer {TOKEN}")]).reached
    assert gate.tokens.lookup(token) == (None, False)


@pytest.mark.parametrize(("spec", "what"), [
    (BearerAuth(method="bearer", token_env="MR_KILL_UNSET"), "the bearer token"),
    (ApiKeyAuth(method="api_key_header", key_env="MR_KILL_UNSET"), "the API key"),
    (BasicAuth(method="basic", username="u", password_env="MR_KILL_UNSET"), "the Basic password"),
    (OAuthClientCredentialsAuth(method="oauth2_client_credentials", client_id="c",
                                client_secret_env="MR_KILL_UNSET"), "the OAuth client secret"),
])
def test_an_unreadable_secret_names_what_it_is_and_where(spec: object, what: str) -> None:
    gate = AuthGate(BEARER)
    with pytest.raises(AuthConfigError) as refused:
        gate.configure(spec)  # type: ignore[arg-type]
    assert str(refused.value) == f"auth: {what}: environment variable MR_KILL_UNSET is not set"
    assert gate.spec == BEARER
