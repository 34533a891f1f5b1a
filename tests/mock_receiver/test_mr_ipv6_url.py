"""Bound to an IPv6 literal, the receiver announces URLs that a client can use: the host is
bracketed (RFC 3986), not run together with the port."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest
from mr_auth_support import AuthServer, behaviour_file


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this host")
def test_an_ipv6_listener_announces_bracketed_urls_that_work(tmp_path: Path) -> None:
    with AuthServer(behaviour_file(tmp_path, None), tmp_path / "state", extra=("--host", "::1")) as server:
        assert server.data_url.startswith("http://[::1]:")
        assert server.admin_url.startswith("http://[::1]:")
        answer = httpx.get(server.admin_url + "/_admin/effects", headers={"X-Restproof-Admin": "1"}, timeout=10)
    assert answer.status_code == 200
