"""The client TLS context a binding's TLS policy asks for: always verifying (certificate chain and
host name), at least the policy's minimum version, trusting the platform store or exactly the
policy's CA bundle, plus the client identity when the binding authenticates with mTLS.

Errors are ``TlsConfigurationError`` with a stable code (``transport.tls.*``) and no OpenSSL text
(which can quote a path or a PEM line).
"""

from __future__ import annotations

import ssl

from sink.contracts.security_policy import TlsPolicy
from sink.contracts.transport import CredentialUnavailable
from sink.transport.auth_methods import MtlsAuth

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigurationError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def client_context(policy: TlsPolicy, client_identity: MtlsAuth | None = None) -> ssl.SSLContext:
    if policy.ca_bundle_ref == "system":
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    else:
        try:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH,
                                                 cafile=policy.ca_bundle_ref.removeprefix("file://"))
        except (OSError, ValueError):
            raise TlsConfigurationError("transport.tls.ca_bundle_unreadable",
                                        f"the CA bundle of TLS policy {policy.id} cannot be loaded") from None
    # create_default_context already verifies; restated so that no later edit can weaken it unseen.
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    context.minimum_version = _VERSIONS[policy.minimum_version]
    if client_identity is not None:
        try:
            client_identity.load_into(context)
        except CredentialUnavailable:
            raise TlsConfigurationError("transport.tls.client_identity_unloadable",
                                        "the mTLS client certificate or key cannot be loaded (missing file, "
                                        "wrong passphrase or a key that does not match)") from None
    return context
