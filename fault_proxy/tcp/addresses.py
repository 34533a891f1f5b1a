"""Parse the `host:port` strings that Toxiproxy's API uses for `listen` and `upstream`."""

from __future__ import annotations

import re

LOOPBACK = "127.0.0.1"
MAX_PORT = 65535
MAX_ADDRESS_CHARS = 300
# A host is a DNS name or an IPv4 literal (ASCII letters, digits, dots, hyphens) or, in brackets,
# an IPv6 literal. Anything else (spaces, NUL, non-ASCII, lone surrogates) could not be dialled
# or bound and would fail later, inside a connection task, instead of at the API.
_NAME_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}")
_V6_HOST = re.compile(r"[0-9A-Fa-f:.]{2,45}(%[A-Za-z0-9_.-]{1,32})?")


class AddressError(ValueError):
    """An address string that is not `host:port` (HTTP 400 / CLI exit 2)."""


def split_host_port(value: str, *, default_host: str | None = None) -> tuple[str, int]:
    """Split `host:port`, `[v6]:port` or `:port` (host taken from `default_host`).

    An empty host means "all interfaces" to Toxiproxy; here it means `default_host`, so a proxy
    created as `:0` stays on loopback unless the caller names another interface explicitly.
    """
    # Messages never echo the value: it may be megabytes long or hold characters a log cannot show.
    if not isinstance(value, str) or ":" not in value:
        raise AddressError("address is not host:port")
    if len(value) > MAX_ADDRESS_CHARS:
        raise AddressError(f"address longer than {MAX_ADDRESS_CHARS} characters")
    host, _, port_text = value.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    if not host:
        if default_host is None:
            raise AddressError("address has no host")
        host = default_host
    elif not (_V6_HOST if bracketed else _NAME_HOST).fullmatch(host):
        raise AddressError("address has an invalid host (a DNS name, an IPv4 address or [IPv6])")
    if not port_text.isascii() or not port_text.isdigit() or len(port_text) > len(str(MAX_PORT)):
        raise AddressError(f"address has no numeric port in 0..{MAX_PORT}")
    port = int(port_text)
    if port > MAX_PORT:
        raise AddressError(f"address has a port above {MAX_PORT}")
    return host, port


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
