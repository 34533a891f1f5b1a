"""A restarted worker as "a different host": its own Linux network namespace and address.

Where the harness runs as root and ``ip netns`` works, every lane gets a namespace joined to the
host by a veth pair (a /30 of its own). The restarted hosts of that lane run inside it (``ip
netns exec``), so the fault proxy — which also listens on the veth's host address — logs their
connections from the namespace's address, not from 127.0.0.1. The sink under test keeps its
binding unchanged (plain http is accepted only for a loopback authority): a small relay inside the
namespace listens on the namespace's own 127.0.0.1 at the binding's port and forwards each
connection to the proxy's veth address, byte for byte, half-closes included. The first host still
talks to the proxy directly, so every fault armed for it keeps its exact wire semantics.

Elsewhere (not root, no ``ip``) the restarted worker is today's fresh process with its own worker
id and working directory; the artifacts' environment records which mode ran.
"""

from __future__ import annotations

import fcntl
import ipaddress
import itertools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import cache

from certification.services import ServiceUnavailable

NAMESPACE_MODE = "network_namespace"
PROCESS_MODE = "fresh_process"
_COUNTER = itertools.count()
_IP_TIMEOUT_S = 20.0
_RELAY = r"""
import asyncio, sys
listen_port, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        try:
            writer.write_eof()
        except OSError:
            pass
async def handle(reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_connection(host, port)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    writer.close()
    up_writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


class NamespaceUnavailable(ServiceUnavailable):
    """A namespace could not be set up although the probe said namespaces work."""


@dataclass(frozen=True, slots=True)
class HostNamespace:
    name: str
    host_address: str
    """The host end of the veth pair (the proxy listens here too)."""
    address: str
    """The namespace's own address: what the proxy logs for a restarted worker."""

    def prefix(self) -> tuple[str, ...]:
        return exec_prefix(self.name)


def exec_prefix(name: str | None) -> tuple[str, ...]:
    """The command prefix that runs a command in the named network namespace (none: here)."""
    return () if name is None else ("ip", "netns", "exec", name)


def namespace_path(name: str) -> str:
    """Where ``ip netns`` keeps the named namespace (what ``setns`` joins)."""
    return f"/run/netns/{name}"


def _ip(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["ip", *args], capture_output=True, timeout=_IP_TIMEOUT_S, check=False)


@cache
def namespaces_work() -> bool:
    """Root, ``ip`` present, and a probe namespace can be added and deleted."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"rpprobe{os.getpid()}"
    added = _ip("netns", "add", probe).returncode == 0
    if added:
        _ip("netns", "del", probe)
        remove_stale()
    return added


def isolation_mode(requested: str) -> str:
    """``auto`` -> namespaces where they work; ``process`` -> always fresh processes."""
    return NAMESPACE_MODE if requested == "auto" and namespaces_work() else PROCESS_MODE


_POOL = ipaddress.ip_network("10.237.0.0/16")
_SLOTS = _POOL.num_addresses // 4
_LOCK_PATH = "/run/restproof-netns.lock"  # root only, like `ip netns` itself (which keeps /run/netns)


def _taken_slots() -> set[int]:
    """The /30 slots of the pool that any interface of the host already holds an address in."""
    listed = _ip("-o", "-4", "addr", "show").stdout.decode("ascii", "replace")
    taken = set()
    for found in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)", listed):
        address = ipaddress.ip_address(found.group(1))
        if address in _POOL:
            taken.add((int(address) - int(_POOL.network_address)) // 4)
    return taken


def _free_subnet(index: int) -> tuple[str, str]:
    # Linux lets two interfaces hold the same address, and then the replies to one namespace are
    # routed into another: a collision is silent, so the caller picks a slot no interface holds
    # while it holds the host-wide lock, and keeps the lock until its own address is added.
    taken = _taken_slots()
    start = (os.getpid() * 8 + index) % _SLOTS  # spread, so that the first probe is usually free
    for offset in range(_SLOTS):
        slot = (start + offset) % _SLOTS
        if slot not in taken:
            base = int(_POOL.network_address) + slot * 4
            return str(ipaddress.ip_address(base + 1)), str(ipaddress.ip_address(base + 2))
    raise NamespaceUnavailable(f"every /30 of {_POOL} is in use on this host")


@contextmanager
def _allocation_lock() -> Iterator[None]:
    with open(_LOCK_PATH, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


_OURS = re.compile(r"^rp(\d+)n(\d+)\Z")


def remove_stale() -> list[str]:
    """Namespaces a killed harness left (named after a pid that no longer runs): removed."""
    listed = _ip("netns", "list").stdout.decode("ascii", "replace")
    removed = []
    for line in listed.splitlines():
        name = line.split(" ", 1)[0]
        match = _OURS.fullmatch(name)
        if match is None or _alive(int(match.group(1))):
            continue
        _delete(name, f"rp{match.group(1)}h{match.group(2)}")
        removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _delete(name: str, host_link: str) -> None:
    _ip("netns", "del", name)  # takes the namespace's veth end, and with it the pair
    _ip("link", "del", host_link)


@contextmanager
def host_namespace() -> Iterator[HostNamespace]:
    index = next(_COUNTER)
    name, host_link, ns_link = f"rp{os.getpid()}n{index}", f"rp{os.getpid()}h{index}", f"rp{os.getpid()}v{index}"
    try:
        before: tuple[tuple[str, ...], ...] = (
            ("netns", "add", name), ("link", "add", host_link, "type", "veth", "peer", "name", ns_link),
            ("link", "set", ns_link, "netns", name))
        for step in before:
            _step(name, step)
        with _allocation_lock():  # choose and claim the addresses as one step among all harnesses
            host_address, address = _free_subnet(index)
            _step(name, ("addr", "add", f"{host_address}/30", "dev", host_link))
        after: tuple[tuple[str, ...], ...] = (
            ("link", "set", host_link, "up"), ("-n", name, "addr", "add", f"{address}/30", "dev", ns_link),
            ("-n", name, "link", "set", ns_link, "up"), ("-n", name, "link", "set", "lo", "up"))
        for step in after:
            _step(name, step)
        yield HostNamespace(name, host_address, address)
    finally:
        _delete(name, host_link)


def _step(name: str, step: tuple[str, ...]) -> None:
    if _ip(*step).returncode != 0:
        raise NamespaceUnavailable(f"ip {step[0]} {step[1]} failed while setting up namespace {name}")


@contextmanager
def relay(namespace: HostNamespace, listen_port: int, target_port: int) -> Iterator[None]:
    """Inside the namespace: 127.0.0.1:listen_port -> host_address:target_port."""
    process = subprocess.Popen(
        [*namespace.prefix(), sys.executable, "-I", "-S", "-c", _RELAY, str(listen_port), namespace.host_address,
         str(target_port)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    with ExitStack() as stack:
        stack.callback(_stop, process)
        assert process.stdout is not None
        if process.stdout.readline().strip() != b"ready":
            raise NamespaceUnavailable(f"the relay in namespace {namespace.name} did not start")
        yield


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()
