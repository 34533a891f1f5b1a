"""The restarted worker as another host: in its own network namespace (root + ``ip netns``), the
proxy sees it from the namespace's own address; the namespace is always removed; the artifacts say
which isolation ran."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

import pytest

from certification.artifacts import environment
from certification.matrix import RowRunner, family_services
from certification.netns import NAMESPACE_MODE, PROCESS_MODE, isolation_mode, namespaces_work, remove_stale
from certification.scenarios import bundled_rows
from certification.sinks import bundled_sinks

needs_netns = pytest.mark.skipif(not namespaces_work(), reason="needs root and a working `ip netns`")


def _peers(clients: list[str]) -> set[str]:
    return {client.rsplit(":", 1)[0] for client in clients}


def _namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {line.split()[0] for line in listed.splitlines() if line.strip()}


@needs_netns
def test_the_resumed_worker_reaches_the_proxy_from_its_own_namespace_address(tmp_path: Path) -> None:
    row = next(r for r in bundled_rows() if r.row_id == "sync.kill.after_commit")
    with family_services(row, tmp_path / "services", 0, isolation=NAMESPACE_MODE) as family:
        assert family.namespace is not None
        namespace = family.namespace
        assert namespace.name in _namespaces()
        result = RowRunner(family, row, bundled_sinks()["reference"], tmp_path / "row", 0,
                           role="certified").run(must_be_caught=False)
        # Sinks reach the proxy through the wire tap: the tap sees each connection's own client address.
        clients = [connection.client for connection in family.tap.connections()]
    assert result.verdict == "PASS", (result.reasons, result.exit_codes)
    assert len(result.exit_codes) >= 2  # killed, then resumed by another host
    # The reference sink's runs fork warm (certification.warm_start): the resumed one joins the namespace itself.
    assert result.warm_processes == result.processes == len(result.exit_codes)
    peers = _peers(clients)
    assert "127.0.0.1" in peers  # the first host, in the harness's own network
    assert namespace.address in peers  # the resumed host, from its namespace's address
    # Removed again. Only this row's own namespace is checked: other processes on the host (an xdist
    # worker, a certify run) create and remove theirs at any moment.
    assert namespace.name not in _namespaces()


def test_process_mode_is_what_the_artifacts_record_when_asked_for() -> None:
    assert isolation_mode("process") == PROCESS_MODE
    assert environment(PROCESS_MODE)["worker_isolation"] == PROCESS_MODE
    expected = NAMESPACE_MODE if namespaces_work() else PROCESS_MODE
    assert isolation_mode("auto") == expected


@needs_netns
def test_a_namespace_left_by_a_killed_harness_is_removed() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    name = f"rp{dead.pid}n0"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    try:
        assert name in _namespaces()
        assert name in remove_stale()
        assert name not in _namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


@needs_netns
def test_a_subnet_some_interface_already_holds_is_never_handed_out_again() -> None:
    # Linux accepts the same address on two interfaces and then routes one namespace's replies into
    # the other, so the allocator itself must skip every /30 the host already uses.
    from certification.netns import _free_subnet

    first_host, _ = _free_subnet(0)
    link = f"rpt{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", link, "type", "veth", "peer", "name", f"{link}p"],
                   check=True, capture_output=True)
    try:
        subprocess.run(["ip", "addr", "add", f"{first_host}/30", "dev", link], check=True, capture_output=True)
        second_host, second_address = _free_subnet(0)
        assert int(ipaddress.ip_address(second_host)) // 4 != int(ipaddress.ip_address(first_host)) // 4
        assert int(ipaddress.ip_address(second_address)) // 4 == int(ipaddress.ip_address(second_host)) // 4
    finally:
        subprocess.run(["ip", "link", "del", link], check=False, capture_output=True)
