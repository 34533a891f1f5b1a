"""Cost of the mock receiver's authentication and TLS listener (script, not a test).

Starts one `mock-receiver serve` per configuration on free loopback ports and measures, side by side, with
ratios against the open plain-HTTP receiver:

  keep-alive   sequential summary reads on one connection (the per-request cost of the credential check
               and of TLS record processing)
  new-conn     sequential summary reads, each on a new connection (adds the TCP + TLS handshake, and the
               client-certificate verification for mTLS)

Configurations: open-http (no auth), bearer-http, bearer-https, oauth-https (one token, then bearer reads),
mtls-https. Before measuring, each configuration checks that a request without its credential is refused
(401, or a refused handshake for mTLS) and that every measured answer is 200: the script fails (exit 1) only
on a wrong result, never on a figure.

  python benchmarks/bench_mock_receiver_auth.py            # 10 rounds of 200 keep-alive + 20 new-connection reads
  python benchmarks/bench_mock_receiver_auth.py --quick    # CI: 2 rounds of 50 + 5
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml
from pydantic import TypeAdapter
from starlette.datastructures import Headers

from mock_receiver.auth import AuthGate
from mock_receiver.auth_spec import AuthSpec

REPO = Path(__file__).resolve().parents[1]
BASE_BEHAVIOUR = REPO / "scenarios" / "receivers" / "dataset-jobs.yaml"
BIN = Path(sys.executable).parent / "mock-receiver"
SUMMARY = "/mock/v1/resources/measurements/summary"
TOKEN = "bench-bearer-token"
SECRET = "bench-client-secret"

CONFIGURATIONS: dict[str, tuple[dict[str, object] | None, bool]] = {
    "open-http": (None, False),
    "bearer-http": ({"method": "bearer", "token_env": "BENCH_TOKEN"}, False),
    "bearer-https": ({"method": "bearer", "token_env": "BENCH_TOKEN"}, True),
    "oauth-https": ({"method": "oauth2_client_credentials", "client_id": "bench", "client_secret_env": "BENCH_SECRET",
                     "token_ttl_seconds": 3600}, True),
    "mtls-https": ({"method": "mtls", "subject_cn": "bench-client"}, True),
}


class WrongResult(Exception):
    pass


def _start(workdir: Path, name: str, auth: dict[str, object] | None, tls: bool
           ) -> tuple[subprocess.Popen[str], dict[str, str]]:
    document = yaml.safe_load(BASE_BEHAVIOUR.read_text(encoding="utf-8"))
    if auth is not None:
        document["auth"] = auth
    behaviour = workdir / f"{name}.yaml"
    behaviour.write_text(yaml.safe_dump(document), encoding="utf-8")
    args = [str(BIN), "serve", "--port", "0", "--admin-port", "0", "--behaviour", str(behaviour),
            "--state-dir", str(workdir / f"{name}-state"), "--durability", "normal"]
    if tls:
        args += ["--tls-dir", str(workdir / f"{name}-tls")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "BENCH_TOKEN": TOKEN, "BENCH_SECRET": SECRET}
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if select.select([process.stdout], [], [], 0.2)[0]:
            line = process.stdout.readline()
            if line:
                return process, json.loads(line)
            break
    process.kill()
    raise WrongResult(f"{name}: the receiver did not start: {process.communicate()[1][-500:]}")


def _context(endpoints: dict[str, str], name: str, *, with_cert: bool) -> ssl.SSLContext | bool:
    if "tls_dir" not in endpoints:
        # A context built once, as for HTTPS: verify=True would build (and load a CA bundle into) a new
        # one for every client, a cost the new-connection figure of plain HTTP must not carry.
        return ssl.create_default_context()
    tls_dir = Path(endpoints["tls_dir"])
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.pem"))
    if with_cert and name.startswith("mtls"):
        context.load_cert_chain(str(tls_dir / "client.pem"), str(tls_dir / "client.key"))
    return context


def _credential(name: str, url: str, verify: ssl.SSLContext | bool) -> dict[str, str]:
    if name.startswith("bearer"):
        return {"Authorization": f"Bearer {TOKEN}"}
    if name.startswith("oauth"):
        answer = httpx.post(url + "/oauth/token", data={"grant_type": "client_credentials"}, auth=("bench", SECRET),
                            verify=verify)
        if answer.status_code != 200:
            raise WrongResult(f"{name}: token request answered {answer.status_code}")
        return {"Authorization": f"Bearer {answer.json()['access_token']}"}
    return {}


def _check_refusal(name: str, url: str, endpoints: dict[str, str]) -> None:
    if name == "open-http":
        return
    try:
        answer = httpx.get(url + SUMMARY, verify=_context(endpoints, name, with_cert=False), timeout=10)
    except httpx.TransportError:
        if name.startswith("mtls"):
            return  # refused at the handshake, as it must be
        raise
    if answer.status_code != 401:
        raise WrongResult(f"{name}: a request without the credential answered {answer.status_code}")


@dataclass
class Target:
    name: str
    url: str
    verify: ssl.SSLContext | bool
    headers: dict[str, str]
    keep_alive_seconds: float = 0.0
    new_connection_seconds: float = 0.0


def _prepare(name: str, endpoints: dict[str, str]) -> Target:
    url = endpoints["data_url"]
    verify = _context(endpoints, name, with_cert=True)
    _check_refusal(name, url, endpoints)
    return Target(name, url, verify, _credential(name, url, verify))


def _round(target: Target, keep_alive: int, new_connections: int) -> None:
    with httpx.Client(base_url=target.url, verify=target.verify, headers=target.headers, timeout=10) as client:
        client.get(SUMMARY)  # the connection (and handshake) outside the timing
        started = time.perf_counter()
        for _ in range(keep_alive):
            if client.get(SUMMARY).status_code != 200:
                raise WrongResult(f"{target.name}: a keep-alive read was refused")
        target.keep_alive_seconds += time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(new_connections):
        with httpx.Client(base_url=target.url, verify=target.verify, headers=target.headers, timeout=10) as client:
            if client.get(SUMMARY).status_code != 200:
                raise WrongResult(f"{target.name}: a new-connection read was refused")
    target.new_connection_seconds += time.perf_counter() - started


def _gate_costs(checks: int) -> list[tuple[str, float]]:
    """Microseconds per AuthGate.check for an accepted request, in process (the pure CPU cost)."""
    os.environ.setdefault("BENCH_TOKEN", TOKEN)
    os.environ.setdefault("BENCH_SECRET", SECRET)
    peer = {"client_cert_dict": {"subject": ((("commonName", "bench-client"),),), "subjectAltName": ()}}
    costs = []
    for name, (auth, _) in CONFIGURATIONS.items():
        spec = TypeAdapter(AuthSpec).validate_python(auth or {"method": "none"})
        gate = AuthGate(spec)
        headers = {"authorization": f"Bearer {TOKEN}"}
        if name.startswith("oauth"):
            headers = {"authorization": f"Bearer {gate.tokens.issue(3600, frozenset())}"}
        request_headers = Headers(headers=headers)
        if gate.check(request_headers, peer) is not None:
            raise WrongResult(f"{name}: the gate refused the right credential")
        started = time.perf_counter()
        for _ in range(checks):
            gate.check(request_headers, peer)
        costs.append((name, (time.perf_counter() - started) / checks * 1e6))
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few requests per configuration, for CI")
    options = parser.parse_args()
    rounds, keep_alive, new_connections = (2, 50, 5) if options.quick else (10, 200, 20)
    try:
        gate_costs = _gate_costs(2_000 if options.quick else 50_000)
    except WrongResult as error:
        print(f"WRONG RESULT: {error}", file=sys.stderr)
        return 1
    processes: list[subprocess.Popen[str]] = []
    targets: list[Target] = []
    with tempfile.TemporaryDirectory(prefix="bench-mr-auth-") as temporary:
        try:
            for name, (auth, tls) in CONFIGURATIONS.items():
                process, endpoints = _start(Path(temporary), name, auth, tls)
                processes.append(process)
                targets.append(_prepare(name, endpoints))
            # Interleaved rounds: every configuration sees the same machine load, so the ratios hold on a
            # busy machine even when the absolute figures drift.
            for _ in range(rounds):
                for target in targets:
                    _round(target, keep_alive, new_connections)
        except WrongResult as error:
            print(f"WRONG RESULT: {error}", file=sys.stderr)
            return 1
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
                process.communicate(timeout=20)
    base = targets[0]
    base_ka = rounds * keep_alive / base.keep_alive_seconds
    base_nc = rounds * new_connections / base.new_connection_seconds
    print(f"{'configuration':<14} {'keep-alive req/s':>17} {'ratio':>6} {'new-conn req/s':>15} {'ratio':>6}")
    for target in targets:
        ka = rounds * keep_alive / target.keep_alive_seconds
        nc = rounds * new_connections / target.new_connection_seconds
        print(f"{target.name:<14} {ka:>17.0f} {ka / base_ka:>6.2f} {nc:>15.1f} {nc / base_nc:>6.2f}")
    print("gate check, in process: " + ", ".join(f"{name} {micros:.1f} us" for name, micros in gate_costs))
    print(f"({rounds} interleaved rounds of {keep_alive} keep-alive and {new_connections} new-connection summary "
          "reads per configuration, one sequential client, loopback)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
