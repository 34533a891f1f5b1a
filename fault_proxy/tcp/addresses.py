"""Parse the `host:port` strings that Toxiproxy's API uses for `listen` and `upstream`."""

from __future__ import annotations

LOOPBACK = "127.0.0.1"
MAX_PORT = 65535


class AddressError(ValueError):
    """An address string that is not `host:port` (HTTP 400 / CLI exit 2)."""


def split_host_port(value: str, *, default_host: str | None = None) -> tuple[str, int]:
    """Split `host:port`, `[v6]:port` or `:port` (host taken from `default_host`).

    An empty host means "all interfaces" to Toxiproxy; here it means `default_host`, so a proxy
    created as `:0` stays on loopback unless the caller names another interface explicitly.
    """
    if not isinstance(value, str) or ":" not in value:
        raise AddressError(f"address {value!r} is not host:port")
    host, _, port_text = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        if default_host is None:
            raise AddressError(f"address {value!r} has no host")
        host = default_host
    if not port_text.isdigit():
        raise AddressError(f"address {value!r} has no numeric port")
    port = int(port_text)
    if port > MAX_PORT:
        raise AddressError(f"address {value!r} has a port above {MAX_PORT}")
    return host, port


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
