"""``CredentialResolverPort``: a binding's ``credential_ref`` → ``SecretValue``, fresh each call.

Providers are registered by reference scheme. ``env`` and ``file`` ship here; a vault provider
registers under ``vault`` (``registry.register("vault", provider)``) without touching the
transport. Nothing is cached: each call reads the current value, so a rotated token is picked
up by the next request, and a resolved secret is never handed to another process.

Errors carry a stable reason only: neither the value nor the variable name or file path (a
locator can reveal more than intended in a shared log).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from sink.contracts.secret import SecretValue
from sink.contracts.transport import CredentialUnavailable

MAX_SECRET_BYTES = 64 * 1024


class CredentialProvider(Protocol):
    def resolve(self, locator: str) -> SecretValue:
        """``locator`` is the part after ``scheme://``; raises ``CredentialUnavailable``."""


class EnvironmentProvider:
    """``env://NAME``: the process environment (or an injected mapping, for tests)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def resolve(self, locator: str) -> SecretValue:
        value = self._environ.get(locator)
        if value is None:
            raise CredentialUnavailable("env_variable_unset")
        if not value:
            raise CredentialUnavailable("env_variable_empty")
        return SecretValue(value)


class FileProvider:
    """``file:///absolute/path``: a regular file holding the secret (one trailing newline dropped)."""

    def resolve(self, locator: str) -> SecretValue:
        path = Path("/" + locator.lstrip("/"))
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            raise CredentialUnavailable("file_unreadable") from None
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise CredentialUnavailable("file_not_regular")
            raw = os.read(descriptor, MAX_SECRET_BYTES + 1)
        except OSError:
            raise CredentialUnavailable("file_unreadable") from None
        finally:
            os.close(descriptor)
        if len(raw) > MAX_SECRET_BYTES:
            raise CredentialUnavailable("file_too_large")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CredentialUnavailable("file_not_utf8") from None
        text = text[:-1] if text.endswith("\n") else text
        text = text[:-1] if text.endswith("\r") else text
        if not text:
            raise CredentialUnavailable("file_empty")
        return SecretValue(text)


class CredentialRegistry:
    """Implements ``CredentialResolverPort`` by dispatching on the reference's scheme."""

    def __init__(self, providers: Mapping[str, CredentialProvider] | None = None) -> None:
        self._providers: dict[str, CredentialProvider] = dict(providers or {})

    def register(self, scheme: str, provider: CredentialProvider) -> None:
        if scheme in self._providers:
            raise ValueError(f"a provider for {scheme!r} is already registered")
        self._providers[scheme] = provider

    def resolve(self, credential_ref: str) -> SecretValue:
        scheme, separator, locator = credential_ref.partition("://")
        if not separator or not locator:
            raise CredentialUnavailable("malformed_reference")
        provider = self._providers.get(scheme)
        if provider is None:
            raise CredentialUnavailable("no_provider_for_scheme")
        return provider.resolve(locator)


def default_registry(environ: Mapping[str, str] | None = None) -> CredentialRegistry:
    return CredentialRegistry({"env": EnvironmentProvider(environ), "file": FileProvider()})
