"""The TLS listener's material, generated afresh at every start with ``trustme``, and its SSL context.

``--tls-dir DIR`` receives (PEM; keys unencrypted, mode 0600):

* ``ca.pem``: the test CA that signed the server certificate: a client's CA bundle;
* ``server.pem``/``server.key``: the server certificate for 127.0.0.1, localhost, ::1 (and the
  ``--host`` when it is another name or address);
* ``client-ca.pem``: the CA the listener verifies client certificates against;
* ``client.pem``/``client.key``: a good client certificate (subject CN and subjectAltName configurable);
* ``client-wrong-subject.*``: the same CA, another subject (the mTLS subject check answers 403);
* ``client-expired.*``: the good subject, but its validity ended yesterday (refused at the handshake);
* ``client-foreign.*`` (+ ``foreign-ca.pem``): the good subject, from a CA the listener does not
  trust (refused at the handshake);
* ``client-encrypted.key``: with a key passphrase, the good pair's key encrypted with it (PKCS#8).
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
from cryptography.hazmat.primitives import serialization
from uvicorn.config import HTTP_PROTOCOLS
from uvicorn.importer import import_from_string

from mock_receiver.auth_spec import AuthSpec, MutualTlsAuth
from mock_receiver.secret_sources import AuthConfigError, read_env_secret
from mock_receiver.tls_peer import with_tls_extension

SERVER_IDENTITIES = ("127.0.0.1", "localhost", "::1")
DEFAULT_CLIENT_CN = "restproof-client"
_WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 (names no certificate can carry)
CLIENT_PAIRS = ("client", "client-wrong-subject", "client-expired", "client-foreign")


class TlsSetupError(ValueError):
    """The TLS directory cannot be prepared (the message names the path)."""


@dataclass(frozen=True)
class TlsMaterial:
    directory: Path
    client_cn: str
    client_san: str | None

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def server_cert(self) -> Path:
        return self.directory / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.directory / "server.key"

    @property
    def client_ca_file(self) -> Path:
        return self.directory / "client-ca.pem"

    def pair(self, name: str) -> tuple[Path, Path]:
        """(certificate, key) of one of ``CLIENT_PAIRS``."""
        if name not in CLIENT_PAIRS:
            raise KeyError(name)
        return self.directory / f"{name}.pem", self.directory / f"{name}.key"


def _server_identities(host: str) -> list[str]:
    identities = list(SERVER_IDENTITIES)
    if host not in _WILDCARD_HOSTS and host not in identities:
        try:
            identities.append(str(ipaddress.ip_address(host)))
        except ValueError:
            identities.append(host)
    return identities


def _write(path: Path, data: bytes, *, secret: bool) -> None:
    path.unlink(missing_ok=True)  # a fresh inode: a stale file's mode or a link is never reused
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600 if secret else 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _write_leaf(directory: Path, name: str, leaf: trustme.LeafCert) -> None:
    _write(directory / f"{name}.pem", b"".join(blob.bytes() for blob in leaf.cert_chain_pems), secret=False)
    _write(directory / f"{name}.key", leaf.private_key_pem.bytes(), secret=True)


def _encrypted_key(leaf: trustme.LeafCert, passphrase: str) -> bytes:
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.BestAvailableEncryption(passphrase.encode("utf-8")))


def generate_tls_material(directory: Path, *, host: str, client_cn: str = DEFAULT_CLIENT_CN,
                          client_san: str | None = None, key_passphrase: str | None = None) -> TlsMaterial:
    """Write a new server CA, client CA, server certificate and the four client pairs into ``directory``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not directory.is_dir():
            raise TlsSetupError(f"--tls-dir {directory} is not a directory")
        server_ca, client_ca, foreign_ca = trustme.CA(), trustme.CA(), trustme.CA()
        _write(directory / "ca.pem", server_ca.cert_pem.bytes(), secret=False)
        _write(directory / "client-ca.pem", client_ca.cert_pem.bytes(), secret=False)
        _write(directory / "foreign-ca.pem", foreign_ca.cert_pem.bytes(), secret=False)
        _write_leaf(directory, "server", server_ca.issue_cert(*_server_identities(host)))
        good = (client_san,) if client_san else ()
        wrong_cn = f"not-{client_cn}"[:64]
        wrong = (f"not-{client_san}",) if client_san else ()
        now = datetime.datetime.now(datetime.UTC)
        client = client_ca.issue_cert(*good, common_name=client_cn)
        _write_leaf(directory, "client", client)
        if key_passphrase is not None:
            _write(directory / "client-encrypted.key", _encrypted_key(client, key_passphrase), secret=True)
        _write_leaf(directory, "client-wrong-subject", client_ca.issue_cert(*wrong, common_name=wrong_cn))
        _write_leaf(directory, "client-expired", client_ca.issue_cert(
            *good, common_name=client_cn, not_before=now - datetime.timedelta(days=2),
            not_after=now - datetime.timedelta(days=1)))
        _write_leaf(directory, "client-foreign", foreign_ca.issue_cert(*good, common_name=client_cn))
    except OSError as error:
        raise TlsSetupError(f"--tls-dir {directory}: {error.strerror or error.__class__.__name__}") from None
    return TlsMaterial(directory=directory, client_cn=client_cn, client_san=client_san)


def tls_material_for(tls_dir: Path | None, auth: AuthSpec, host: str, passphrase_env: str | None
                     ) -> TlsMaterial | None:
    """The material ``serve`` options ask for (None without ``--tls-dir``); the good client pair carries
    the subject an ``mtls`` section expects."""
    if tls_dir is None:
        if isinstance(auth, MutualTlsAuth):
            raise TlsSetupError("auth method mtls needs --tls-dir (the listener must be HTTPS)")
        if passphrase_env is not None:
            raise TlsSetupError("--client-key-passphrase-env needs --tls-dir")
        return None
    try:
        passphrase = read_env_secret(passphrase_env) if passphrase_env is not None else None
    except AuthConfigError as error:
        raise TlsSetupError(f"--client-key-passphrase-env: {error}") from None
    mtls = auth if isinstance(auth, MutualTlsAuth) else None
    return generate_tls_material(tls_dir, host=host, client_cn=(mtls and mtls.subject_cn) or DEFAULT_CLIENT_CN,
                                 client_san=mtls.subject_san if mtls else None, key_passphrase=passphrase)


def server_context(material: TlsMaterial, *, require_client_cert: bool) -> ssl.SSLContext:
    """TLS 1.2+; a client certificate is always asked for and verified against ``client-ca.pem`` when
    sent (CERT_OPTIONAL), and required when ``require_client_cert`` (CERT_REQUIRED)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(material.server_cert, material.server_key)
    context.load_verify_locations(cafile=material.client_ca_file)
    context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return context


def uvicorn_protocol(http: str) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class for the --http choice (auto, h11 or httptools), resolved as uvicorn does."""
    protocol: type[asyncio.Protocol] = import_from_string(HTTP_PROTOCOLS[http])
    return protocol


def uvicorn_tls_options(context: ssl.SSLContext, protocol: type[asyncio.Protocol]) -> dict[str, Any]:
    """``uvicorn.Config`` keyword arguments serving HTTPS with ``context`` and per-request client
    certificates, over the HTTP protocol class ``protocol``."""

    def factory(_config: Any, _default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        return context

    return {"ssl_context_factory": factory, "http": with_tls_extension(protocol)}
