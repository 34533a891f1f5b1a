"""No secret reaches a log line, the ledger, an admin answer or a problem document (sentinel values,
a real server at ``--log-level trace`` over TLS, every method switched in through the admin API)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote_plus

import httpx
import yaml
from mr_auth_support import BATCHES, ROWS, SUMMARY, AuthServer, behaviour_file, client_context

TOKEN = "SENTINEL-TOKEN-a1b2c3"
API_KEY = "SENTINEL-APIKEY-d4e5f6"
PASSWORD = "SENTINEL-PASSWORD-g7h8"
CLIENT_SECRET = "SENTINEL-CLIENTSECRET-i9j0"
WRONG = "SENTINEL-WRONG-k1l2"
PASSPHRASE = "SENTINEL-PASSPHRASE-m3n4"
ENV = {"MR_LOG_TOKEN": TOKEN, "MR_LOG_KEY": API_KEY, "MR_LOG_PASSWORD": PASSWORD, "MR_LOG_SECRET": CLIENT_SECRET,
       "MR_LOG_PASSPHRASE": PASSPHRASE}

METHODS = [
    ({"method": "bearer", "token_env": "MR_LOG_TOKEN"},
     [{"Authorization": f"Bearer {TOKEN}"}, {"Authorization": f"Bearer {WRONG}"}]),
    ({"method": "api_key_header", "header": "X-Ingest-Key", "key_env": "MR_LOG_KEY"},
     [{"X-Ingest-Key": API_KEY}, {"X-Ingest-Key": WRONG}]),
    ({"method": "basic", "username": "loader", "password_env": "MR_LOG_PASSWORD"},
     [{"Authorization": "Basic " + base64.b64encode(f"loader:{secret}".encode()).decode()}
      for secret in (PASSWORD, WRONG)]),
]
OAUTH = {"method": "oauth2_client_credentials", "client_id": "sink", "client_secret_env": "MR_LOG_SECRET",
         "token_ttl_seconds": 60}


def _switch(admin: httpx.Client, base_document: Mapping[str, object], auth: Mapping[str, object]) -> None:
    answer = admin.put("/_admin/behaviour", content=yaml.safe_dump({**base_document, "auth": auth}),
                       headers={"Content-Type": "application/yaml"})
    assert answer.status_code == 200, answer.text


def test_sentinel_secrets_appear_in_no_log_ledger_or_answer(tmp_path: Path) -> None:
    behaviour = behaviour_file(tmp_path, METHODS[0][0], base="json-batches")
    base_document = yaml.safe_load(behaviour.read_text(encoding="utf-8"))
    state = tmp_path / "state"
    server = AuthServer(behaviour, state, env=ENV, extra=["--tls-dir", str(tmp_path / "tls"), "--log-level", "trace",
                                                      "--client-key-passphrase-env", "MR_LOG_PASSPHRASE"])
    answers: list[str] = []
    issued: list[str] = []
    with server, httpx.Client(base_url=server.data_url, verify=client_context(server.tls_dir)) as data, \
                server.admin() as admin:
        for index, (auth, attempts) in enumerate(METHODS):
            _switch(admin, base_document, auth)
            for headers in attempts:
                batch = data.post(BATCHES, json=ROWS, headers={**headers, "Idempotency-Key": f"k{index}"})
                answers += [batch.text, str(batch.headers), data.get(SUMMARY, headers=headers).text]
            assert batch.status_code == 401  # the last attempt is the wrong one
        _switch(admin, base_document, OAUTH)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        good = f"grant_type=client_credentials&client_id=sink&client_secret={quote_plus(CLIENT_SECRET)}"
        bad = f"grant_type=client_credentials&client_id=sink&client_secret={WRONG}"
        token_answer = data.post("/oauth/token", content=good, headers=form)
        assert token_answer.status_code == 200
        issued.append(token_answer.json()["access_token"])
        answers.append(data.post("/oauth/token", content=bad, headers=form).text)
        ok = data.post(BATCHES, json=ROWS, headers={"Authorization": f"Bearer {issued[0]}",
                                                    "Idempotency-Key": "k-oauth"})
        assert ok.status_code == 201, ok.text
        answers.append(data.get(SUMMARY, headers={"Authorization": f"Bearer {WRONG}"}).text)
        for path in ("/_admin/behaviour", "/_admin/auth", "/_admin/requests", "/_admin/effects", "/_admin/stats"):
            answers.append(admin.get(path).text)
    logs = server.stdout + server.stderr
    assert "HTTP connection made" in logs and "ASGI [" in logs  # trace level really was on
    ledger = b"".join(path.read_bytes() for path in state.iterdir() if path.name.startswith("ledger"))
    everything = [TOKEN, API_KEY, PASSWORD, CLIENT_SECRET, WRONG, PASSPHRASE, quote_plus(CLIENT_SECRET), *issued,
                  *(base64.b64encode(f"loader:{secret}".encode()).decode() for secret in (PASSWORD, WRONG))]
    for key in sorted((tmp_path / "tls").glob("*.key")):  # private key material: every base64 line
        everything += [line for line in key.read_text(encoding="ascii").splitlines() if not line.startswith("-----")]
    for sentinel in everything:
        assert sentinel not in logs, sentinel
        assert sentinel.encode() not in ledger, sentinel
        for answer in answers:
            assert sentinel not in answer, (sentinel, answer)
