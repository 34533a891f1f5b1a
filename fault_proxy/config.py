"""Validated settings for ``fault-proxy serve``: addresses, loopback policy, seed."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit


class ConfigError(ValueError):
    """Invalid command-line settings (the CLI turns it into exit status 2)."""


@dataclass(frozen=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ServeConfig:
    listen: HostPort
    upstream_scheme: str
    upstream: HostPort
    control: HostPort
    seed: int
    ready_file: str | None = None

    @property
    def upstream_url(self) -> str:
        return f"{self.upstream_scheme}://{self.upstream}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_host_port(text: str, what: str, *, allow_zero: bool) -> HostPort:
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ConfigError(f"{what}: expected HOST:PORT, got {text!r}")
    host = host.strip("[]")
    if not port_text.isdigit() or not (0 if allow_zero else 1) <= int(port_text) <= 65535:
        raise ConfigError(f"{what}: port must be an integer in {0 if allow_zero else 1}..65535, got {port_text!r}")
    return HostPort(host, int(port_text))


def build_config(
    *,
    listen: str,
    upstream: str,
    control: str,
    seed: int,
    allow_non_loopback: bool = False,
    ready_file: str | None = None,
) -> ServeConfig:
    listen_hp = parse_host_port(listen, "--listen", allow_zero=True)
    control_hp = parse_host_port(control, "--control", allow_zero=True)
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--upstream: expected http://HOST:PORT or https://HOST:PORT, got {upstream!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError("--upstream: give scheme, host and port only (no path, query or credentials)")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ConfigError(f"--upstream: invalid port in {upstream!r}") from None
    upstream_hp = HostPort(parts.hostname, port)
    if not allow_non_loopback:
        for flag, hp in (("--listen", listen_hp), ("--upstream", upstream_hp), ("--control", control_hp)):
            if not _is_loopback(hp.host):
                raise ConfigError(
                    f"{flag}: {hp.host} is not a loopback address; pass --allow-non-loopback to accept it"
                )
    if control_hp.port != 0 and (control_hp.host, control_hp.port) == (listen_hp.host, listen_hp.port):
        raise ConfigError("--control must differ from --listen")
    if (upstream_hp.host, upstream_hp.port) in {(control_hp.host, control_hp.port)}:
        raise ConfigError("--upstream must not point at the control API")
    if seed < 0:
        raise ConfigError("--seed must be >= 0")
    return ServeConfig(listen_hp, parts.scheme, upstream_hp, control_hp, seed, ready_file)
