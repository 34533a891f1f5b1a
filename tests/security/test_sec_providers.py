"""The auth providers and the binding's per-method fields, without a network: what each provider
puts on the wire, what it refuses, and that no secret reaches a repr or an exception."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import ValidationError

from sink.compiler.semantics import binding_semantics_digest
from sink.contracts.binding import ConnectionBinding
from sink.contracts.secret import SecretValue
from sink.contracts.transport import CredentialUnavailable
from sink.transport import AUTH_FACTORIES, auth_for, default_registry
from sink.transport.auth_methods import ApiKeyHeaderAuth, BasicAuth, MtlsAuth, basic_header

SENTINEL_KEY = "sentinel-apikey-7c1d"
SENTINEL_PASSWORD = "sentinel-password-41aa"
BASE = {
    "connection_type": "rest", "description": "test", "authority": "https://localhost:8443", "local": True,
    "auth_provider": "bearer", "credential_ref": "env://T", "remote_principal_id": "p", "remote_account_id": "a",
    "remote_resource_namespace": "ns", "tls_policy_ref": "test-ca@1", "network_policy_ref": "loopback-only@1",
}
OAUTH = {**BASE, "auth_provider": "oauth2_client_credentials", "oauth_token_endpoint": "https://localhost:8443/oauth/token",
         "oauth_client_id": "client-1"}
MTLS = {**BASE, "auth_provider": "mtls", "credential_ref": "file:///keys/client.key",
        "client_certificate_ref": "file:///keys/client.crt"}


def _codes(error: ValidationError) -> set[str]:
    return {item["type"] for item in error.errors()}


def test_every_v1_method_is_registered_and_none_falls_back() -> None:
    assert set(AUTH_FACTORIES) == {"none", "bearer", "api_key_header", "basic", "oauth2_client_credentials", "mtls"}
    with pytest.raises(CredentialUnavailable) as missing:
        auth_for("api_key_header", "env://K", default_registry({"K": SENTINEL_KEY}))  # no header name
    assert missing.value.reason == "missing_api_key_header"
    with pytest.raises(CredentialUnavailable) as no_oauth:
        auth_for("oauth2_client_credentials", "env://K", default_registry({}))
    assert no_oauth.value.reason == "missing_oauth_settings"
    with pytest.raises(CredentialUnavailable):
        auth_for("basic", None, default_registry({}))


def test_api_key_goes_into_the_allowlisted_header_only() -> None:
    environ = {"K": SENTINEL_KEY}
    auth = auth_for("api_key_header", "env://K", default_registry(environ), api_key_header="X-Api-Key")
    assert isinstance(auth, ApiKeyHeaderAuth)
    ((name, value),) = auth.credential_headers()
    assert (name, value.reveal()) == ("x-api-key", SENTINEL_KEY)
    assert SENTINEL_KEY not in repr(auth)
    for bad in ("two\r\nX-Evil: 1", " leading", "caf\u00e9"):
        environ["K"] = bad
        with pytest.raises(CredentialUnavailable) as raised:
            auth.credential_headers()
        assert raised.value.reason == "api_key_malformed" and bad not in str(raised.value)
    for reserved in ("Authorization", "Cookie", "Host", "Content-Length", "Proxy-Authorization", "x key"):
        with pytest.raises(ValueError):
            ApiKeyHeaderAuth(default_registry(environ), "env://K", reserved)


def test_basic_is_rfc7617_and_refuses_a_credential_without_user_or_password() -> None:
    environ = {"B": f"svc-user:{SENTINEL_PASSWORD}"}
    auth = auth_for("basic", "env://B", default_registry(environ))
    assert isinstance(auth, BasicAuth)
    ((name, value),) = auth.credential_headers()
    assert name == "authorization"
    assert value.reveal() == "Basic " + base64.b64encode(f"svc-user:{SENTINEL_PASSWORD}".encode()).decode()
    # The first colon splits (RFC 7617): a password may contain colons.
    assert base64.b64decode(basic_header(SecretValue("u:p:q")).reveal().split()[1]) == b"u:p:q"
    for bad in (SENTINEL_PASSWORD, f":{SENTINEL_PASSWORD}", "user:", f"user:{SENTINEL_PASSWORD}\n"):
        environ["B"] = bad
        with pytest.raises(CredentialUnavailable) as raised:
            auth.credential_headers()
        assert raised.value.reason == "basic_credential_malformed" and SENTINEL_PASSWORD not in str(raised.value)
    assert SENTINEL_PASSWORD not in repr(auth)


def test_mtls_needs_file_references_and_adds_no_header(tmp_path: Path) -> None:
    with pytest.raises(CredentialUnavailable):
        MtlsAuth(default_registry({}), "env://KEY", "file:///c.crt")
    auth = auth_for("mtls", "file:///k.key", default_registry({}), client_certificate_ref="file:///c.crt")
    assert isinstance(auth, MtlsAuth) and auth.credential_headers() == ()
    with pytest.raises(CredentialUnavailable) as missing:
        auth_for("mtls", "file:///k.key", default_registry({}))
    assert missing.value.reason == "missing_client_certificate_ref"


def test_binding_method_fields_exactly_for_their_method() -> None:
    assert ConnectionBinding.model_validate(OAUTH).oauth_client_id == "client-1"
    assert ConnectionBinding.model_validate(MTLS).client_certificate_ref == "file:///keys/client.crt"
    cases = [
        ({**BASE, "oauth_client_id": "c"}, "contract.invalid_value"),
        ({**BASE, "client_certificate_ref": "file:///c.crt"}, "contract.invalid_value"),
        ({**OAUTH, "oauth_client_id": None}, "contract.missing_field"),
        ({**OAUTH, "oauth_token_endpoint": None}, "contract.missing_field"),
        ({**OAUTH, "oauth_token_endpoint": "https://user:pw@localhost/oauth/token"}, "contract.plaintext_secret"),
        ({**OAUTH, "oauth_token_endpoint": "https://localhost/oauth/token?client_secret=x"}, "contract.invalid_value"),
        ({**OAUTH, "oauth_token_endpoint": "https://localhost/a/../token"}, "contract.path_traversal"),
        ({**OAUTH, "oauth_token_endpoint": "ftp://localhost/token"}, "contract.insecure_authority"),
        ({**OAUTH, "oauth_client_id": "a:b"}, "contract.invalid_value"),
        ({**OAUTH, "oauth_scope": 'bad"scope'}, "contract.invalid_value"),
        ({**MTLS, "credential_ref": "env://KEY"}, "contract.invalid_value"),
        ({**MTLS, "client_certificate_ref": "vault://pki/cert"}, "contract.invalid_value"),
        ({**MTLS, "client_certificate_ref": None}, "contract.missing_field"),
        ({**MTLS, "client_key_passphrase_ref": "not a ref"}, "contract.plaintext_secret"),
    ]
    for document, code in cases:
        with pytest.raises(ValidationError) as raised:
            ConnectionBinding.model_validate(document)
        assert code in _codes(raised.value), (document, _codes(raised.value))
    remote = {**OAUTH, "authority": "https://receiver.example.test", "local": False,
              "oauth_token_endpoint": "http://receiver.example.test/oauth/token",
              "remote_identity": {"mode": "receiver_attested", "evidence_ref": "evidence://x",
                                  "verified_at": "2026-01-01T00:00:00Z", "valid_until": "2027-01-01T00:00:00Z"}}
    with pytest.raises(ValidationError) as plain:
        ConnectionBinding.model_validate(remote)
    assert "contract.insecure_authority" in _codes(plain.value)
    ConnectionBinding.model_validate({**remote, "oauth_token_endpoint": "https://receiver.example.test/oauth/token"})


def test_oauth_fields_enter_the_binding_digest_and_secret_references_do_not() -> None:
    digest = binding_semantics_digest(ConnectionBinding.model_validate(OAUTH))
    for change in ({"oauth_client_id": "client-2"}, {"oauth_scope": "ingest.write"},
                   {"oauth_token_endpoint": "https://localhost:8443/oauth2/token"}):
        assert binding_semantics_digest(ConnectionBinding.model_validate({**OAUTH, **change})) != digest, change
    # Case and an explicit default port are the same endpoint.
    same = {**OAUTH, "oauth_token_endpoint": "https://LOCALHOST:8443/oauth/token"}
    assert binding_semantics_digest(ConnectionBinding.model_validate(same)) == digest
    rotated = {**OAUTH, "credential_ref": "env://ROTATED_SECRET"}
    assert binding_semantics_digest(ConnectionBinding.model_validate(rotated)) == digest
    mtls = binding_semantics_digest(ConnectionBinding.model_validate(MTLS))
    moved = {**MTLS, "client_certificate_ref": "file:///keys/next.crt", "credential_ref": "file:///keys/next.key",
             "client_key_passphrase_ref": "env://PASS"}
    assert binding_semantics_digest(ConnectionBinding.model_validate(moved)) == mtls  # certificate rotation
    # A principal swap is a different binding (it can not resume an operation of the old one).
    swapped = {**OAUTH, "remote_principal_id": "other-principal"}
    assert binding_semantics_digest(ConnectionBinding.model_validate(swapped)) != digest
    # Bindings of the other methods keep exactly the two authentication fields they always had.
    assert ConnectionBinding.model_validate(BASE).authentication_semantics == {"provider": "bearer",
                                                                              "api_key_header": None}
