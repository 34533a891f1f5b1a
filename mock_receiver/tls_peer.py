"""The client certificate of a TLS connection, put where an ASGI application can read it.

uvicorn (0.54 here) does not implement the ASGI TLS extension: its pull requests to do so (Kludex/uvicorn
#1119, #2586, #3043, #3132, #3133) are open or closed unmerged, and a request's scope carries no
transport. So the HTTP protocol class is subclassed: when a connection is made (asyncio calls
``connection_made`` only after the TLS handshake, so the peer certificate is final and verified), the
connection's application is wrapped to add ``scope["extensions"]["tls"]`` to each of its requests, in
the ASGI TLS extension's shape (``client_cert_chain`` as PEM, ``tls_version``), plus the
``client_cert_dict`` of ``ssl.SSLObject.getpeercert()``: the parsed subject and subjectAltName, which is
what the subject check reads (the key uvicorn #3043 proposed for the same purpose).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

# ASGI TLS extension: tls_version is the TLS protocol's own number.
_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_extension(ssl_object: ssl.SSLObject | None) -> dict[str, object] | None:
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    # getpeercert() is the parsed certificate only when it was verified (CERT_OPTIONAL/REQUIRED), else {}.
    parsed = ssl_object.getpeercert() if der else None
    return {
        "server_cert": None,  # the ssl module offers no way to read our own certificate back
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": None,
        "client_cert_error": None,  # a failing certificate aborts the handshake: never seen here
        "tls_version": _TLS_VERSIONS.get(ssl_object.version() or ""),
        "cipher_suite": None,
        "client_cert_dict": parsed or None,
    }


class WithTlsExtension:
    """One connection's application: every request scope gets that connection's TLS facts."""

    def __init__(self, app: ASGIApp, tls: dict[str, object]) -> None:
        self.app = app
        self.tls = tls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "extensions": {**(scope.get("extensions") or {}), "tls": self.tls}}
        await self.app(scope, receive, send)


def with_tls_extension(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's HTTP protocol class ``base`` (h11 or httptools) that wraps ``self.app``
    per TLS connection."""

    class TlsExtensionProtocol(base):  # type: ignore[valid-type,misc]
        app: Any

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            tls = tls_extension(transport.get_extra_info("ssl_object"))
            if tls is not None:
                self.app = WithTlsExtension(self.app, tls)

    TlsExtensionProtocol.__name__ = f"TlsExtension{base.__name__}"
    TlsExtensionProtocol.__qualname__ = TlsExtensionProtocol.__name__
    return TlsExtensionProtocol
