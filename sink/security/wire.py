"""Build a binding's transport under its TLS and network policies: the one place that turns a
plan's binding snapshot into a verified TLS context, an address allowlist, and an auth provider
(composition calls ``open_binding_transport`` once per process).

Refusals are ``SecurityRefusal`` (exit 2: the binding or its policies are wrong) raised before any
connection is opened; nothing here can fall back to a laxer setting.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sink.contracts.plan import PlanBinding
from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.security_policy import NetworkPolicy, TlsPolicy
from sink.contracts.transport import CredentialResolverPort, CredentialUnavailable, RestTransportPort
from sink.security.errors import SecurityRefusal
from sink.security.policies import PolicyStore
from sink.transport.auth import AuthProvider, UnsupportedAuth, auth_for
from sink.transport.auth_methods import MtlsAuth
from sink.transport.dns import Resolver, system_resolver
from sink.transport.httpx_transport import HttpxRestTransport
from sink.transport.oauth import ClientSecretBasic, OAuthSettings
from sink.transport.tls import TlsConfigurationError, client_context


@dataclass(slots=True)
class BindingTransport:
    transport: HttpxRestTransport
    auth: AuthProvider
    network: NetworkPolicy
    _opened: list[RestTransportPort] = field(default_factory=list)

    def close(self) -> None:
        for opened in (self.transport, *self._opened):
            opened.close()


def token_origin_allowed(binding: PlanBinding, network: NetworkPolicy) -> bool:
    """The token endpoint is on the binding's own origin, or on one the network policy names."""
    # Only an OAuth binding asks: the identity algebra is not imported by every delivery (start-up cost).
    from sink.identity import canonical_origin  # noqa: PLC0415

    endpoint = binding.oauth_token_endpoint
    if endpoint is None:
        return False
    parts = urlsplit(endpoint)
    origin = canonical_origin(f"{parts.scheme}://{parts.netloc}")
    allowed = {canonical_origin(binding.authority_origin), *(canonical_origin(o) for o in network.token_origins)}
    return origin in allowed


def open_binding_transport(
    binding: PlanBinding, *, timeouts: TimeoutVector, policies: PolicyStore, resolver: CredentialResolverPort,
    dns_resolver: Resolver = system_resolver, clock: Callable[[], float] = time.monotonic, max_connections: int = 8,
) -> BindingTransport:
    tls = policies.tls(binding.tls_policy_ref)
    network = policies.network(binding.network_policy_ref)
    opened: list[RestTransportPort] = []
    oauth: OAuthSettings | None = None
    if binding.auth_provider == "oauth2_client_credentials":
        if not token_origin_allowed(binding, network) or binding.oauth_client_id is None:
            raise SecurityRefusal("transport.auth.token_endpoint_not_allowed",
                                  f"the OAuth token endpoint is neither the binding's origin nor a token origin of "
                                  f"network policy {network.id}")
        endpoint = urlsplit(binding.oauth_token_endpoint or "")
        context_for_token = _context(tls, None)

        def open_token_transport(client: ClientSecretBasic) -> RestTransportPort:
            token_transport = HttpxRestTransport(f"{endpoint.scheme}://{endpoint.netloc}", client,
                                                 ssl_context=context_for_token, resolver=dns_resolver,
                                                 address_allowed=network.allows)
            opened.append(token_transport)
            return token_transport

        oauth = OAuthSettings(open_token_transport, endpoint.path, binding.oauth_client_id, binding.oauth_scope,
                              timeouts, clock)
    try:
        auth = auth_for(binding.auth_provider, binding.credential_ref, resolver,
                        api_key_header=binding.api_key_header, oauth=oauth,
                        client_certificate_ref=binding.client_certificate_ref,
                        client_key_passphrase_ref=binding.client_key_passphrase_ref)
    except (UnsupportedAuth, CredentialUnavailable, ValueError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "method", None) or "invalid"
        raise SecurityRefusal("transport.auth.unusable", f"auth provider {binding.auth_provider} cannot be "
                              f"used ({reason})") from None
    # A plain-http authority (a loopback receiver; never mtls, which the binding contract refuses
    # without https) uses no TLS context: building one loads the system's CA store, about 50 ms of
    # CPU in every process that opens a binding.
    context = None if urlsplit(binding.authority_origin).scheme == "http" \
        else _context(tls, auth if isinstance(auth, MtlsAuth) else None)
    transport = HttpxRestTransport(binding.authority_origin, auth, ssl_context=context, resolver=dns_resolver,
                                   address_allowed=network.allows, max_connections=max_connections)
    return BindingTransport(transport, auth, network, opened)


def _context(tls: TlsPolicy, identity: MtlsAuth | None) -> ssl.SSLContext:
    try:
        return client_context(tls, identity)
    except TlsConfigurationError as exc:
        raise SecurityRefusal(exc.code, str(exc).partition(": ")[2]) from None
