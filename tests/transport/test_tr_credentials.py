"""Credential resolution (env and file providers, the registry seam) and the bearer provider."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sink.contracts.secret import SecretValue
from sink.contracts.transport import CredentialResolverPort, CredentialUnavailable
from sink.transport import BearerAuth, CredentialRegistry, UnsupportedAuth, auth_for, default_registry
from sink.transport.credentials import MAX_SECRET_BYTES

TOKEN = "tok-SENTINEL-9f3a"


def _reason(registry: CredentialRegistry, ref: str) -> str:
    with pytest.raises(CredentialUnavailable) as raised:
        registry.resolve(ref)
    assert TOKEN not in str(raised.value) and "NAME" not in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None or raised.value.__suppress_context__
    return raised.value.reason


def test_env_provider_reads_fresh_each_time() -> None:
    environ = {"API_TOKEN": TOKEN}
    registry = default_registry(environ)
    assert isinstance(registry, CredentialResolverPort)
    assert registry.resolve("env://API_TOKEN").reveal() == TOKEN
    environ["API_TOKEN"] = TOKEN + "-rotated"
    assert registry.resolve("env://API_TOKEN").reveal() == TOKEN + "-rotated"
    assert _reason(registry, "env://NAME_UNSET") == "env_variable_unset"
    environ["EMPTY"] = ""
    assert _reason(registry, "env://EMPTY") == "env_variable_empty"


def test_file_provider(tmp_path: Path) -> None:
    registry = default_registry({})
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    assert registry.resolve(f"file://{secret}").reveal() == TOKEN
    secret.write_text(TOKEN + "\r\n")
    assert registry.resolve(f"file://{secret}").reveal() == TOKEN
    secret.write_text(TOKEN)
    assert registry.resolve(f"file://{secret}").reveal() == TOKEN
    secret.write_text(TOKEN + "\n\n")
    assert registry.resolve(f"file://{secret}").reveal() == TOKEN + "\n"
    secret.write_bytes(b"y" * MAX_SECRET_BYTES)
    assert len(registry.resolve(f"file://{secret}")) == MAX_SECRET_BYTES
    secret.write_text("\n")
    assert _reason(registry, f"file://{secret}") == "file_empty"
    secret.write_bytes(b"\xff" + TOKEN.encode())
    assert _reason(registry, f"file://{secret}") == "file_not_utf8"
    secret.write_bytes(b"x" * (MAX_SECRET_BYTES + 1))
    assert _reason(registry, f"file://{secret}") == "file_too_large"
    assert _reason(registry, f"file://{tmp_path}/missing") == "file_unreadable"
    assert _reason(registry, f"file://{tmp_path}") in ("file_unreadable", "file_not_regular")
    link = tmp_path / "link"
    os.symlink(secret, link)
    assert _reason(registry, f"file://{link}") == "file_unreadable"  # no symlink following


def test_registry_seam() -> None:
    registry = default_registry({})
    assert _reason(registry, "vault://kv/token") == "no_provider_for_scheme"
    assert _reason(registry, "plain-token") == "malformed_reference"
    assert _reason(registry, "env://") == "malformed_reference"
    assert _reason(registry, "://x") == "no_provider_for_scheme"

    class Vault:
        def resolve(self, locator: str) -> SecretValue:
            return SecretValue(f"v-{locator}")

    registry.register("vault", Vault())
    assert registry.resolve("vault://kv/token").reveal() == "v-kv/token"
    with pytest.raises(ValueError):
        registry.register("vault", Vault())


def test_bearer_header_and_refusals() -> None:
    environ = {"T": TOKEN}
    auth = auth_for("bearer", "env://T", default_registry(environ))
    assert isinstance(auth, BearerAuth)
    ((name, value),) = auth.credential_headers()
    assert name == "authorization" and value.reveal() == f"Bearer {TOKEN}"
    assert repr(auth) == "BearerAuth(***)" and TOKEN not in repr(value)
    for bad in ("two words", "line\r\nX-Evil: 1", "caf\u00e9", "=leading"):
        environ["T"] = bad
        with pytest.raises(CredentialUnavailable) as raised:
            auth.credential_headers()
        assert raised.value.reason == "bearer_token_malformed" and bad not in str(raised.value)
    assert auth_for("none", None, default_registry({})).credential_headers() == ()
    with pytest.raises(CredentialUnavailable):
        auth_for("bearer", None, default_registry({}))
    with pytest.raises(UnsupportedAuth) as unsupported:
        auth_for("hmac_signature", "env://T", default_registry({}))  # a later capability (seed)
    assert unsupported.value.method == "hmac_signature"


def test_the_default_environment_is_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESTPROOF_TR_TOKEN", TOKEN)
    assert default_registry().resolve("env://RESTPROOF_TR_TOKEN").reveal() == TOKEN
