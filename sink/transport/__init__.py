"""``RestTransportPort`` adapter: httpx with httpcore phase evidence, a counting network
backend, bounded response parsing, receipt-location acceptance, request rendering, and the
credential/auth seams. See docs/transport.md."""

from sink.transport.auth import AUTH_FACTORIES, AuthProvider, BearerAuth, NoAuth, UnsupportedAuth, auth_for
from sink.transport.credentials import (
    CredentialProvider,
    CredentialRegistry,
    EnvironmentProvider,
    FileProvider,
    default_registry,
)
from sink.transport.httpx_transport import HttpxRestTransport
from sink.transport.location import AcceptedLocation, LocationRefused, accept_location

__all__ = [
    "AUTH_FACTORIES",
    "AcceptedLocation",
    "AuthProvider",
    "BearerAuth",
    "CredentialProvider",
    "CredentialRegistry",
    "EnvironmentProvider",
    "FileProvider",
    "HttpxRestTransport",
    "LocationRefused",
    "NoAuth",
    "UnsupportedAuth",
    "accept_location",
    "auth_for",
    "default_registry",
]
