"""Validated settings for ``fault-proxy serve``: addresses, loopback policy, seed."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_SEED = 2**63 - 1  # the control API's POST /reset accepts the same range
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_BODY_BYTES_LIMIT = 1 << 31  # 2 GiB: above that a buffered body is a memory fault, not a test
DEFAULT_BODY_TIMEOUT_S = 60.0
MAX_BODY_TIMEOUT_S = 3600.0
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _shown(text: str) -> str:
    """An argument quoted in an error line, cut short: the line stays one readable line."""
    return repr(text if len(text) <= 40 else f"{text[:40]}...")


class ConfigError(ValueError):
    """Invalid command-line settings (the CLI turns it into exit status 2)."""


@dataclass(frozen=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ReadLimits:
    """What one request on the proxied port may cost (enforced by ``fault_proxy.wire_limits``)."""

    max_head_bytes: int = 64 * 1024
    head_timeout: float = 10.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S


@dataclass(frozen=True)
class ServeConfig:
    listen: HostPort
    upstream_scheme: str
    upstream: HostPort
    control: HostPort
    seed: int
    ready_file: str | None = None
    also_listen: tuple[HostPort, ...] = ()
    """More listen addresses of the same proxy (one rule set, one log), e.g. a veth address that a
    worker in another network namespace reaches, so the log shows that worker's own address."""
    limits: ReadLimits = ReadLimits()
    log_level: str = "warning"

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
        raise ConfigError(f"{what}: expected HOST:PORT, got {_shown(text)}")
    host = host.strip("[]")
    lowest = 0 if allow_zero else 1
    plain = port_text.isascii() and port_text.isdigit() and len(port_text) <= 5  # int() of 5,000 digits raises
    if not plain or not lowest <= int(port_text) <= 65535:
        raise ConfigError(f"{what}: port must be an integer in {lowest}..65535, got {_shown(port_text)}")
    return HostPort(host, int(port_text))


def check_ready_file(path: str) -> None:
    """Refuse a ready file that cannot be written, before any port is bound."""
    if not path or "\x00" in path:
        raise ConfigError("--ready-file: empty path or NUL character")
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(f"--ready-file: {_shown(path)} is a directory")
    if not os.path.isdir(parent):
        raise ConfigError(f"--ready-file: directory {_shown(parent)} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--ready-file: directory {_shown(parent)} is not writable")


def build_config(
    *,
    listen: str,
    upstream: str,
    control: str,
    seed: int,
    allow_non_loopback: bool = False,
    ready_file: str | None = None,
    also_listen: tuple[str, ...] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
    log_level: str = "warning",
) -> ServeConfig:
    listen_hp = parse_host_port(listen, "--listen", allow_zero=True)
    also_hps = tuple(parse_host_port(text, "--also-listen", allow_zero=True) for text in also_listen)
    hosts = [listen_hp.host, *(hp.host for hp in also_hps)]
    if len(set(hosts)) != len(hosts):
        raise ConfigError("--also-listen: every listen address needs a host of its own")
    control_hp = parse_host_port(control, "--control", allow_zero=True)
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--upstream: expected http://HOST:PORT or https://HOST:PORT, got {_shown(upstream)}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError("--upstream: give scheme, host and port only (no path, query or credentials)")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ConfigError(f"--upstream: invalid port in {_shown(upstream)}") from None
    upstream_hp = HostPort(parts.hostname, port)
    if not allow_non_loopback:
        checked = (("--listen", listen_hp), ("--upstream", upstream_hp), ("--control", control_hp),
                   *(("--also-listen", hp) for hp in also_hps))
        for flag, hp in checked:
            if not _is_loopback(hp.host):
                raise ConfigError(
                    f"{flag}: {hp.host} is not a loopback address; pass --allow-non-loopback to accept it"
                )
    if control_hp.port != 0 and (control_hp.host, control_hp.port) == (listen_hp.host, listen_hp.port):
        raise ConfigError("--control must differ from --listen")
    if (upstream_hp.host, upstream_hp.port) in {(control_hp.host, control_hp.port)}:
        raise ConfigError("--upstream must not point at the control API")
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed must be in 0..{MAX_SEED}")
    if not 1024 <= max_body_bytes <= MAX_BODY_BYTES_LIMIT:
        raise ConfigError(f"--max-body-bytes must be in 1024..{MAX_BODY_BYTES_LIMIT}")
    if not 1 <= body_timeout <= MAX_BODY_TIMEOUT_S:  # NaN fails both comparisons
        raise ConfigError(f"--body-timeout must be in 1..{MAX_BODY_TIMEOUT_S:g} seconds")
    if log_level not in LOG_LEVELS:
        raise ConfigError(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    if ready_file is not None:
        check_ready_file(ready_file)
    limits = ReadLimits(max_body_bytes=max_body_bytes, body_timeout=body_timeout)
    return ServeConfig(listen_hp, parts.scheme, upstream_hp, control_hp, seed, ready_file, also_hps, limits,
                       log_level)
