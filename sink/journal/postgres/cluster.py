"""Throwaway PostgreSQL clusters started from the server binaries (tests and benchmarks).

``initdb`` and ``pg_ctl`` refuse to run as root, so when the caller is root the server tools run
as the ``postgres`` system user: the cluster directory is chowned to it and every parent
directory is made traversable. Each cluster listens on a free 127.0.0.1 port and keeps its unix
socket inside its own directory, so concurrent clusters on one machine never collide.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

SERVER_BIN_CANDIDATES = (
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
)
SERVER_USER = "postgres"
START_TIMEOUT_S = 60


class ClusterUnavailable(RuntimeError):
    """The server binaries are missing or the cluster could not start (message says which)."""


def find_server_binaries() -> Path:
    """Directory holding initdb/pg_ctl/pg_basebackup, preferring the Debian layout."""
    override = os.environ.get("RESTPROOF_PG_BIN")
    candidates = [override] if override else []
    candidates += list(SERVER_BIN_CANDIDATES)
    for candidate in candidates:
        if candidate and (Path(candidate) / "pg_ctl").is_file() and (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    on_path = shutil.which("pg_ctl")
    if on_path and (Path(on_path).parent / "initdb").is_file():
        return Path(on_path).parent
    raise ClusterUnavailable("PostgreSQL server binaries (pg_ctl, initdb) not found; install `postgresql`")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _running_as_root() -> bool:
    return os.geteuid() == 0


def _server_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError as exc:
        raise ClusterUnavailable(f"running as root but no `{SERVER_USER}` system user exists") from exc
    return entry.pw_uid, entry.pw_gid


def _make_parents_traversable(path: Path) -> None:
    """Give 'others' search permission on every ancestor so the server user can reach `path`."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


@dataclass
class Cluster:
    """One running (or stopped) throwaway cluster."""

    bin_dir: Path
    base_dir: Path
    port: int
    name: str
    owned_base: bool = True
    running: bool = False
    _log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self._log_path = self.base_dir / f"{self.name}.log"

    @property
    def data_dir(self) -> Path:
        return self.base_dir / self.name

    @property
    def socket_dir(self) -> Path:
        return self.base_dir / "sock"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname} connect_timeout=10"

    def run_tool(self, tool: str, *args: str, timeout: float = START_TIMEOUT_S) -> str:
        """Run a server tool, as the `postgres` user when we are root; raise with its output."""
        uid: int | None = None
        gid: int | None = None
        if _running_as_root():
            uid, gid = _server_ids()
        cmd = [str(self.bin_dir / tool), *args]
        try:
            proc = self._run(cmd, timeout, uid, gid)
        except subprocess.TimeoutExpired as exc:
            raise ClusterUnavailable(f"{tool} did not finish within {timeout} s") from exc
        if proc.returncode != 0:
            raise ClusterUnavailable(f"{tool} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return proc.stdout

    def _run(self, cmd: list[str], timeout: float, uid: int | None,
             gid: int | None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=str(self.base_dir),
            env={**os.environ, "LC_ALL": "C", "PGCONNECT_TIMEOUT": "10"},
            user=uid,
            group=gid,
        )

    def configure(self, settings: Mapping[str, str | int]) -> None:
        """Append settings to postgresql.conf (later lines win over earlier ones)."""
        lines = [f"{key} = '{value}'" if isinstance(value, str) else f"{key} = {value}"
                 for key, value in settings.items()]
        conf = self.data_dir / "postgresql.conf"
        with conf.open("a", encoding="utf-8") as handle:
            handle.write("\n# restproof throwaway cluster\n" + "\n".join(lines) + "\n")

    def start(self) -> None:
        self.run_tool("pg_ctl", "-D", str(self.data_dir), "-l", str(self._log_path), "-w",
                      "-t", str(START_TIMEOUT_S), "start")
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        if not self.running:
            return
        self.run_tool("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "stop")
        self.running = False

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self._log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

    def destroy(self) -> None:
        with contextlib.suppress(ClusterUnavailable, subprocess.TimeoutExpired):
            self.stop("immediate")
        if self.owned_base:
            shutil.rmtree(self.base_dir, ignore_errors=True)


DEFAULT_SETTINGS: dict[str, str | int] = {
    "listen_addresses": "127.0.0.1",
    "max_connections": 100,
    "shared_buffers": "128MB",
    "wal_level": "replica",
    "max_wal_senders": 10,
    "log_min_messages": "warning",
    "logging_collector": "off",
}


def _new_base_dir(prefix: str) -> Path:
    base = Path(tempfile.mkdtemp(prefix=prefix))
    if _running_as_root():
        uid, gid = _server_ids()
        _make_parents_traversable(base)
        os.chown(base, uid, gid)
    return base


def start_primary(settings: Mapping[str, str | int] | None = None, *, name: str = "primary",
                  attempts: int = 3) -> Cluster:
    """initdb + start a cluster on a free port; retries when another process grabs the port."""
    bin_dir = find_server_binaries()
    base = _new_base_dir(f"restproof-pg-{name}-")
    cluster = Cluster(bin_dir=bin_dir, base_dir=base, port=0, name=name)
    try:
        cluster.socket_dir.mkdir()
        if _running_as_root():
            uid, gid = _server_ids()
            os.chown(cluster.socket_dir, uid, gid)
        cluster.run_tool("initdb", "-D", str(cluster.data_dir), "-U", "postgres", "-A", "trust",
                         "-E", "UTF8", "--locale=C", "--no-sync")
        last_error: ClusterUnavailable | None = None
        for _ in range(attempts):
            cluster.port = free_port()
            cluster.configure({**DEFAULT_SETTINGS, **(settings or {}), "port": cluster.port,
                               "unix_socket_directories": str(cluster.socket_dir)})
            try:
                cluster.start()
                return cluster
            except ClusterUnavailable as exc:
                last_error = exc
                time.sleep(0.2)
        raise ClusterUnavailable(f"could not start: {last_error}; log: {cluster.log_tail()}")
    except BaseException:
        cluster.destroy()
        raise


def start_standby(primary: Cluster, application_name: str) -> Cluster:
    """pg_basebackup -R -X stream from `primary` into a sibling directory and start it.

    `cluster_name` doubles as the walreceiver's application_name, which is what
    synchronous_standby_names matches.
    """
    standby = Cluster(bin_dir=primary.bin_dir, base_dir=primary.base_dir, port=free_port(),
                      name=application_name, owned_base=False)
    standby.run_tool("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                     "-D", str(standby.data_dir), "-R", "-X", "stream", "--no-sync")
    standby.configure({"port": standby.port, "cluster_name": application_name,
                       "hot_standby": "on"})
    standby.start()
    return standby


class ClusterSet:
    """Clusters made for one test (e.g. a primary and its standbys), destroyed together.

    `on_unavailable` turns a start failure into the caller's policy (skip or fail a test).
    """

    def __init__(self, on_unavailable: Callable[[str], None] | None = None) -> None:
        self._clusters: list[Cluster] = []
        self._on_unavailable = on_unavailable

    def primary(self, settings: Mapping[str, str | int] | None = None) -> Cluster:
        try:
            cluster = start_primary(settings)
        except (ClusterUnavailable, OSError) as exc:
            if self._on_unavailable is not None:
                self._on_unavailable(str(exc))
            raise
        self._clusters.append(cluster)
        return cluster

    def standby(self, primary: Cluster, application_name: str) -> Cluster:
        standby = start_standby(primary, application_name)
        self._clusters.append(standby)
        return standby

    def adopt(self, cluster: Cluster) -> Cluster:
        """Destroy `cluster` with the others (e.g. a server started on a restored base backup)."""
        self._clusters.append(cluster)
        return cluster

    def destroy_all(self) -> None:
        for cluster in reversed(self._clusters):
            cluster.destroy()
        self._clusters.clear()
