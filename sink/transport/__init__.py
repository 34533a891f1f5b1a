"""``RestTransportPort`` adapter: httpcore with its phase evidence, a counting network
backend, bounded response parsing, receipt-location acceptance, request rendering, and the
credential/auth seams. See docs/transport.md."""

from sink.transport.auth import (
    AUTH_FACTORIES,
    AuthProvider,
    AuthSettings,
    BearerAuth,
    NoAuth,
    UnsupportedAuth,
    auth_for,
)
from sink.transport.auth_methods import ApiKeyHeaderAuth, BasicAuth, MtlsAuth
from sink.transport.credentials import (
    CredentialProvider,
    CredentialRegistry,
    EnvironmentProvider,
    FileProvider,
    default_registry,
)
from sink.transport.httpx_transport import HttpxRestTransport
from sink.transport.location import AcceptedLocation, LocationRefused, accept_location
from sink.transport.oauth import OAuthClientCredentials, OAuthSettings

__all__ = [
    "AUTH_FACTORIES",
    "AcceptedLocation",
    "ApiKeyHeaderAuth",
    "AuthProvider",
    "AuthSettings",
    "BasicAuth",
    "BearerAuth",
    "CredentialProvider",
    "CredentialRegistry",
    "EnvironmentProvider",
    "FileProvider",
    "HttpxRestTransport",
    "LocationRefused",
    "MtlsAuth",
    "NoAuth",
    "OAuthClientCredentials",
    "OAuthSettings",
    "UnsupportedAuth",
    "accept_location",
    "auth_for",
    "default_registry",
]
