"""DNS rebinding: the admin API of a real `mock-receiver serve` answers only a Host naming it (the
loopback literals or a name it was started with, with the listener's own port), reads included, on
its own port and on the data port; the data API is not affected; Origin checks stay."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from mr_support import ADMIN_HEADERS, MOCK_RECEIVER_BIN, RECEIVERS, ServerProcess, admin_items, rows_for
from mr_wire import authority, exchange, request_bytes

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

RANGE = "range_start=2026-07-01&range_end=2026-07-02"
BATCHES = f"/mock/v1/resources/measurements/batches?{RANGE}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path_factory.mktemp("rebind"),
                            extra=("--allow-host", "receiver.test")).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The admin API on the data port (no --admin-port)."""
    process = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path_factory.mktemp("rebind-shared"),
                            admin_port=False).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


def _hostile_hosts(url: str, other_port: str) -> list[list[tuple[str, str]]]:
    """Host header lines a rebinding page (or a confused client) could send; each must be refused."""
    port = _port(url)
    return [
        [("Host", f"evil.example:{port}")],
        [("Host", f"127.0.0.1.rebind.evil.example:{port}")],   # starts with 127.
        [("Host", f"localhost.evil.example:{port}")],
        [("Host", f"127.0.0.2:{port}")],                        # loopback, but not a name it answers to
        [("Host", f"0.0.0.0:{port}")],                          # browsers send 0.0.0.0 to this machine
        [("Host", f"[::]:{port}")],
        [("Host", f"localhost.:{port}")],                       # the trailing-dot spelling is another name
        [("Host", f"127.0.0.1:{other_port}")],                  # the right name, another listener's port
        [("Host", "127.0.0.1")],                                # no port: means 80
        [("Host", f"127.0.0.1:{port}"), ("Host", f"evil.example:{port}")],  # two Host headers
        [("Host", f"evil.example:{port}"), ("Host", f"127.0.0.1:{port}")],
        [("Host", f"user@127.0.0.1:{port}")],
    ]


def _refused(url: str, method: str, path: str, hosts: list[tuple[str, str]], body: bytes = b"") -> None:
    headers = [*hosts, ("X-Restproof-Admin", "1"), ("Connection", "close")]
    if body:
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    answer = exchange(url, request_bytes(method, path, headers, body))
    if len(hosts) > 1:  # h11 itself refuses a second Host line (its plain 400): the application never sees it
        assert answer.status in (400, 403), (hosts, answer.raw[:300])
        return
    assert answer.status == 403, (hosts, answer.raw[:300])
    assert json.loads(answer.body)["type"].endswith("forbidden_host")


def _state(admin_url: str) -> tuple[int, int, float, str]:
    with httpx.Client(base_url=admin_url, timeout=10) as admin:
        return (len(admin_items(admin, "effects")), len(admin_items(admin, "requests")),
                admin.get("/_admin/clock").json()["offset_seconds"], admin.get("/_admin/behaviour").json()["name"])


def test_foreign_hosts_reach_no_admin_endpoint_reads_included(server: ServerProcess) -> None:
    assert httpx.post(server.data_url + BATCHES, json=rows_for(["2026-07-01"]), timeout=10).status_code == 200
    before = _state(server.admin_url)
    behaviour = json.dumps({"name": "replaced", "resources": {"m": {"mutation": "incremental_append",
                                                                    "date_field": "d"}}}).encode()
    calls = [("GET", "/_admin/effects", b""), ("GET", "/_admin/requests", b""), ("GET", "/_admin/health", b""),
             ("GET", "/openapi.json", b""), ("POST", "/_admin/reset", b""),
             ("POST", "/_admin/clock/advance", b'{"seconds": 3600}'), ("PUT", "/_admin/behaviour", behaviour)]
    for hosts in _hostile_hosts(server.admin_url, _port(server.data_url)):
        for method, path, body in calls:
            _refused(server.admin_url, method, path, hosts, body)
    assert _state(server.admin_url) == before


def test_a_request_without_host_is_refused(server: ServerProcess) -> None:
    answer = exchange(server.admin_url, b"GET /_admin/effects HTTP/1.0\r\n\r\n")
    assert answer.status == 403 and b"forbidden_host" in answer.body


def test_the_loopback_names_and_the_names_it_was_started_with_are_answered(server: ServerProcess) -> None:
    port = _port(server.admin_url)
    for name in ("127.0.0.1", "localhost", "LOCALHOST", "[::1]", "receiver.test"):
        answer = exchange(server.admin_url, request_bytes("GET", "/_admin/health", [("Host", f"{name}:{port}")]))
        assert answer.status == 200, (name, answer.raw[:200])
    # and the operator's clients, which send the URL's own authority
    with httpx.Client(base_url=server.admin_url, headers=ADMIN_HEADERS, timeout=10) as admin:
        assert admin.get("/_admin/effects").status_code == 200
        assert admin.post("/_admin/clock/advance", json={"seconds": 1}).status_code == 200


def test_the_shared_port_guards_its_admin_paths_and_leaves_the_data_api_alone(shared: ServerProcess) -> None:
    for hosts in _hostile_hosts(shared.data_url, "1"):
        _refused(shared.data_url, "GET", "/_admin/effects", hosts)
        _refused(shared.data_url, "POST", "/_admin/reset", hosts)
    rows = json.dumps(rows_for(["2026-07-01"])).encode()
    port = _port(shared.data_url)
    # The data API answers whatever Host a client names it by (a proxy in front of it, say).
    answer = exchange(shared.data_url, request_bytes("POST", BATCHES, [
        ("Host", f"evil.example:{port}"), ("Content-Type", "application/json"),
        ("Content-Length", str(len(rows)))], rows))
    assert answer.status == 200, answer.raw[:300]
    with httpx.Client(base_url=shared.data_url, timeout=10) as admin:
        assert len(admin_items(admin, "effects")) == 1


def test_the_origin_check_stays_behind_the_host_check(server: ServerProcess) -> None:
    own = authority(server.admin_url)
    for origin in ("http://evil.example", f"http://127.0.0.1.evil.example:{_port(server.admin_url)}", "null"):
        answer = exchange(server.admin_url, request_bytes("POST", "/_admin/reset", [
            ("Host", own), ("Origin", origin), ("X-Restproof-Admin", "1")]))
        assert answer.status == 403 and b"foreign_origin" in answer.body, origin


def test_allow_host_refuses_wildcards_and_non_names(tmp_path_factory: pytest.TempPathFactory) -> None:
    for value in ("0.0.0.0", "::", "evil.example:80", "a b", "[zz::1]"):
        result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--behaviour",
                                 str(RECEIVERS / "dataset-jobs.yaml"), "--state-dir",
                                 str(tmp_path_factory.mktemp("allow")), "--allow-host", value],
                                check=False, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, (value, result.stderr)
        assert "--allow-host" in result.stderr and "Traceback" not in result.stderr
