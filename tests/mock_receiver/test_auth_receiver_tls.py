"""The TLS listener (``--tls-dir``): HTTPS verified against the generated CA, credentials over it, mTLS."""

from __future__ import annotations

import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mr_auth_support import BATCHES, ROWS, SUMMARY, AuthServer, behaviour_file, client_context
from mr_support import MOCK_RECEIVER_BIN

TOKEN = "sentinel-tls-bearer-52be"
PASSPHRASE = "sentinel-key-passphrase-0c9d"


def test_the_endpoints_carry_the_https_url_and_the_tls_dir(tmp_path: Path) -> None:
    tls_dir = tmp_path / "tls"
    with AuthServer(behaviour_file(tmp_path, None), tmp_path / "state", extra=["--tls-dir", str(tls_dir)]) as server:
        written = json.loads((tmp_path / "state" / "endpoints.json").read_text(encoding="utf-8"))
        assert written == server.endpoints
        assert server.data_url.startswith("https://127.0.0.1:")
        assert server.admin_url.startswith("http://127.0.0.1:")  # its own port stays plain HTTP
        assert written["tls_dir"] == str(tls_dir.resolve())
        assert written["ca_file"] == str((tls_dir / "ca.pem").resolve())
        names = sorted(path.name for path in tls_dir.iterdir())
        assert names == sorted(["ca.pem", "client-ca.pem", "foreign-ca.pem", "server.pem", "server.key",
                                *(f"{pair}.{ext}" for pair in ("client", "client-wrong-subject", "client-expired",
                                                              "client-foreign") for ext in ("pem", "key"))])
        for key in tls_dir.glob("*.key"):
            assert key.stat().st_mode & 0o077 == 0, key
        # Verified against the generated CA, under each name the server certificate carries.
        for host in ("127.0.0.1", "localhost"):
            url = server.data_url.replace("127.0.0.1", host)
            assert httpx.get(url + SUMMARY, verify=client_context(tls_dir)).status_code == 200
        # Not trusted by a client that does not hold the CA, and plain HTTP is not served there.
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.data_url + SUMMARY, verify=ssl.create_default_context())
        with pytest.raises(httpx.TransportError):
            httpx.get(server.data_url.replace("https://", "http://") + SUMMARY)


def test_a_shared_admin_port_is_https_too(tmp_path: Path) -> None:
    with AuthServer(behaviour_file(tmp_path, None), tmp_path / "state", extra=["--tls-dir", str(tmp_path / "t")],
                    admin_port=False) as server:
        assert server.admin_url == server.data_url and server.admin_url.startswith("https://")
        health = httpx.get(server.admin_url + "/_admin/health", verify=client_context(server.tls_dir))
        assert health.status_code == 200


def test_bearer_over_tls(tmp_path: Path) -> None:
    behaviour = behaviour_file(tmp_path, {"method": "bearer", "token_env": "MR_TLS_TOKEN"}, base="json-batches")
    with AuthServer(behaviour, tmp_path / "state", env={"MR_TLS_TOKEN": TOKEN},
                    extra=["--tls-dir", str(tmp_path / "tls"), "--http", "h11"]) as server:
        with httpx.Client(base_url=server.data_url, verify=client_context(server.tls_dir)) as client:
            refused = client.post(BATCHES, json=ROWS)
            assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
            accepted = client.post(BATCHES, json=ROWS, headers={"Authorization": f"Bearer {TOKEN}",
                                                                "Idempotency-Key": "k-1"})
            assert accepted.status_code == 201, accepted.text
        with server.admin() as admin:
            assert len(admin.get("/_admin/effects").json()["items"]) == 1
            assert admin.get("/_admin/auth").json()["requests_refused"] == {"authentication_required": 1}


MTLS = {"method": "mtls", "subject_cn": "sink-loader"}


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    tmp_path = tmp_path_factory.mktemp("mtls")
    server = AuthServer(behaviour_file(tmp_path, MTLS), tmp_path / "state", env={"MR_KEY_PASSPHRASE": PASSPHRASE},
                        extra=["--tls-dir", str(tmp_path / "tls"), "--client-key-passphrase-env", "MR_KEY_PASSPHRASE"])
    server.start()
    yield server
    server.stop()


def _get(server: AuthServer, pair: str | None) -> httpx.Response:
    return httpx.get(server.data_url + SUMMARY, verify=client_context(server.tls_dir, pair), timeout=10)


def test_mtls_accepts_the_good_client_certificate(mtls_server: AuthServer) -> None:
    # Its CN is the behaviour's subject_cn: the subject check passes.
    assert _get(mtls_server, "client").status_code == 200


def test_the_encrypted_client_key_needs_its_passphrase(mtls_server: AuthServer) -> None:
    tls_dir = mtls_server.tls_dir
    key = tls_dir / "client-encrypted.key"
    assert b"ENCRYPTED PRIVATE KEY" in key.read_bytes() and key.stat().st_mode & 0o077 == 0
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.pem"))
    context.load_cert_chain(str(tls_dir / "client.pem"), str(key), password=PASSPHRASE)
    assert httpx.get(mtls_server.data_url + SUMMARY, verify=context, timeout=10).status_code == 200
    with pytest.raises(ssl.SSLError):
        ssl.create_default_context().load_cert_chain(str(tls_dir / "client.pem"), str(key), password="wrong")
    assert PASSPHRASE not in mtls_server.stdout + mtls_server.stderr


def test_mtls_answers_403_to_a_certificate_of_another_subject(mtls_server: AuthServer) -> None:
    response = _get(mtls_server, "client-wrong-subject")
    assert response.status_code == 403
    assert response.json()["type"] == "urn:restproof:mock-receiver:problem:forbidden_principal"


@pytest.mark.parametrize("pair", ["client-expired", "client-foreign", None])
def test_mtls_refuses_an_expired_foreign_or_absent_certificate_at_the_handshake(mtls_server: AuthServer,
                                                                               pair: str | None) -> None:
    # TLS 1.3: the client's handshake ends before the server's verdict, so the refusal arrives as an
    # alert on the first read; either way no HTTP answer is ever received.
    with pytest.raises(httpx.TransportError):
        _get(mtls_server, pair)


def test_mtls_counts_only_the_requests_that_reached_http(mtls_server: AuthServer) -> None:
    _get(mtls_server, "client")
    with mtls_server.admin() as admin:
        status = admin.get("/_admin/auth").json()
    assert status["method"] == "mtls"
    assert status["requests_accepted"] >= 1
    assert set(status["requests_refused"]) <= {"forbidden_principal"}


def test_mtls_checks_the_subject_alt_name_too(tmp_path: Path) -> None:
    behaviour = behaviour_file(tmp_path, {"method": "mtls", "subject_san": "loader.sink.test"})
    with AuthServer(behaviour, tmp_path / "state", extra=["--tls-dir", str(tmp_path / "tls")]) as server:
        assert _get(server, "client").status_code == 200
        assert _get(server, "client-wrong-subject").status_code == 403


def test_mtls_without_a_tls_dir_and_an_unset_secret_exit_2(tmp_path: Path) -> None:
    base = [str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--state-dir", str(tmp_path / "s")]
    result = subprocess.run([*base, "--behaviour", str(behaviour_file(tmp_path, MTLS))], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2 and "mtls needs --tls-dir" in result.stderr
    assert "Traceback" not in result.stderr
    bearer = behaviour_file(tmp_path, {"method": "bearer", "token_env": "MR_UNSET_TOKEN_VAR"})
    result = subprocess.run([*base, "--behaviour", str(bearer)], capture_output=True, text=True, timeout=60,
                            check=False, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and "MR_UNSET_TOKEN_VAR is not set" in result.stderr
    assert "Traceback" not in result.stderr
    blocked = tmp_path / "file"
    blocked.write_text("x", encoding="utf-8")
    result = subprocess.run([*base, "--behaviour", str(behaviour_file(tmp_path, None)), "--tls-dir", str(blocked)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "--tls-dir" in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run([*base, "--behaviour", str(behaviour_file(tmp_path, None)), "--tls-dir",
                             str(tmp_path / "tls"), "--client-key-passphrase-env", "MR_UNSET_PASSPHRASE"],
                            capture_output=True, text=True, timeout=60, check=False, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and "MR_UNSET_PASSPHRASE is not set" in result.stderr
