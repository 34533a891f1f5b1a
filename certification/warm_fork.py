"""The warm launcher's server: one process that has imported a Python sink's modules once and forks
every run of that sink from itself (``python -m certification.warm_fork FD ENTRY [MODULE ...]``).

Every run of the reference sink paid about 0.5 s of CPU for its imports before its first request
(``python -X importtime``), and the full matrix starts about 900 of them. A fork of a process that has
already imported them starts in a few milliseconds. The forked child is then what a fresh
``delivery`` process would be (certification.warm_start checks the command is the console script of
this same entry point): its own argv, environment, working directory and standard streams, its own
pid, held until the harness's go signal, and killed, stopped or left to exit exactly like one. What it
shares with its siblings is what a fresh process would build again the same way: imported modules.

The protocol (one message per ``sendmsg`` on a SOCK_SEQPACKET socket, JSON):
``{"op": "spawn", "argv", "env", "cwd", "go"}`` with the child's stdout as a passed descriptor, answered
``{"pid"}``; ``{"op": "reap", "pid"}``, answered ``{"code", "cpu"}`` (the harness asks only once the
child has exited, so the ``wait4`` returns at once). The server never reaps on its own: while the
harness has not asked, the pid stays the sink's (a zombie keeps it), as with a child of its own. The
socket's end (the harness gone) ends the server. This module imports nothing of the harness: the
server's memory is the sink's modules alone.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

MAX_MESSAGE = 1 << 20
GO_WAIT_S = 30.0
"""As the cold launcher: a run never released within this is abandoned (exit 70)."""
NO_GO_EXIT = 70
CLONE_NEWNET = 0x40000000


def _entry(spec: str) -> Callable[[], object]:
    module, _, name = spec.partition(":")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{spec} is not callable")
    return target  # type: ignore[no-any-return]


def _exit_code(value: object) -> int:
    """What ``sys.exit(value)`` makes the process's status (the console script's ``sys.exit(main())``)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1


def _run(entry: Callable[[], object]) -> int:
    try:
        return _exit_code(entry())
    except SystemExit as exc:
        return _exit_code(exc.code)
    except BaseException as exc:  # what an uncaught exception does to a fresh process: exit 1
        sys.stderr.write(f"{type(exc).__name__}\n")
        return 1


def _join_network_namespace(path: str) -> None:
    """What ``ip netns exec`` does for the network (another host's address and routes); its other
    steps (a private mount of /sys, /etc/netns files) change nothing a sink reads. os.setns is
    Python 3.12's; libc's is the same call."""
    import ctypes  # noqa: PLC0415 - only a child that moves to another host needs it

    libc = ctypes.CDLL(None, use_errno=True)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(descriptor, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(descriptor)


def _child(server: socket.socket, stdout_fd: int, request: dict[str, Any], entry: Callable[[], object]) -> None:
    """In the forked child: become the sink's process, wait for the go signal, run, exit. Never returns."""
    code = 1
    try:
        server.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the server ignores it; a process does not
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(null, 2)
        os.closerange(3, 1 << 16)  # no descriptor of the server's reaches the sink
        if request.get("netns"):
            _join_network_namespace(request["netns"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()  # a fresh process reads TZ at start
        sys.argv = list(request["argv"])
        go, deadline = request["go"], time.monotonic() + GO_WAIT_S
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.005)
        if not os.path.exists(go):
            os._exit(NO_GO_EXIT)
        code = _run(entry)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        atexit._run_exitfuncs()
        os._exit(code)


def _serve(server: socket.socket, entry: Callable[[], object]) -> None:
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(server, MAX_MESSAGE, 1)
        except OSError:
            return
        if not data:
            return  # the harness is gone
        request = json.loads(data)
        if request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                _child(server, fds[0], request, entry)
            os.close(fds[0])
            server.send(json.dumps({"pid": pid}).encode())
        elif request["op"] == "reap":
            _, status, usage = os.wait4(int(request["pid"]), 0)
            server.send(json.dumps({"code": os.waitstatus_to_exitcode(status),
                                    "cpu": usage.ru_utime + usage.ru_stime}).encode())


def main() -> None:
    fd, entry_spec, *modules = sys.argv[1:]
    server = socket.socket(fileno=int(fd))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the harness's to handle; it closes the socket
    # A console script runs with its own directory first on sys.path, not the server's working directory.
    sys.path[0] = os.path.dirname(sys.executable)
    try:
        for module in modules:
            importlib.import_module(module)
        entry = _entry(entry_spec)
    except Exception as exc:  # the harness launches cold instead, and says why
        server.send(json.dumps({"ready": False, "error": f"{type(exc).__name__} importing {entry_spec}"}).encode())
        return
    gc.collect()
    gc.freeze()  # the imported objects stay out of every child's collections: fewer copied pages
    server.send(json.dumps({"ready": True}).encode())
    _serve(server, entry)


if __name__ == "__main__":
    main()
