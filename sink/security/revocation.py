"""The deny-only revocation list (seed: "a separate mutable deny-only revocation authority can
prevent every new submit using a compromised profile or binding; it cannot enable a behavior,
reinterpret a pinned plan, or prevent read-only observation and reconciliation").

The list is a small YAML file named by ``RESTPROOF_REVOCATION_LIST``, read again before *every*
new submit (never cached: a revocation takes effect at the next attempt of a running delivery).
An entry names a ``profile`` (its ``profile_contract_digest``) or a ``binding`` (its
``receiver_binding_semantics_digest``). The list can only refuse: it has no field that permits
anything. Polling, inspection and reconciliation never consult it.

A configured list that cannot be read fails closed (exit 3): deleting the file must not lift a
revocation.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol

from pydantic import Field, ValidationError

from sink.contracts._base import ContractModel
from sink.contracts.errors import ExitClass
from sink.security.errors import SecurityRefusal

REVOCATION_LIST_VARIABLE = "RESTPROOF_REVOCATION_LIST"
REVOCATIONS_SCHEMA_ID = "restproof.revocations.v1"
Digest = str


class Revocation(ContractModel):
    kind: Literal["profile", "binding"]
    digest: Digest = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    reason: str | None = Field(default=None, max_length=200)
    """Display only (a ticket number); never a secret."""


class RevocationList(ContractModel):
    schema_id: Literal["restproof.revocations.v1"]
    revoked: tuple[Revocation, ...] = Field(default=(), max_length=10_000)


class SubmitGate(Protocol):
    """Asked before every new mutation attempt; raises ``SecurityRefusal`` to block it."""

    def assert_submit_allowed(self) -> None: ...


class OpenGate:
    """No revocation list configured."""

    def assert_submit_allowed(self) -> None:
        return None


def read_revocations(path: Path) -> RevocationList:
    # Imported here: a process without a revocation list never parses YAML (start-up cost).
    from sink.bounded_yaml import BoundedYamlError, load_bounded_yaml_file  # noqa: PLC0415

    try:
        document = load_bounded_yaml_file(path, max_bytes=4 * 1024 * 1024)
        return RevocationList.model_validate(document)
    except BoundedYamlError:
        raise SecurityRefusal("security.revocation_list_unavailable",
                              "the revocation list cannot be read; no new submit until it can",
                              ExitClass.UNAVAILABLE) from None
    except ValidationError:
        raise SecurityRefusal("security.revocation_list_invalid",
                              "the revocation list is not a restproof.revocations.v1 document; no new submit",
                              ExitClass.UNAVAILABLE) from None


class RevocationGate:
    """The gate of one compiled plan: its profile contract digest and binding semantics digest."""

    def __init__(self, path: Path, *, profile_contract_digest: str, binding_digest: str) -> None:
        self._path = path
        self._profile = profile_contract_digest
        self._binding = binding_digest

    def assert_submit_allowed(self) -> None:
        for entry in read_revocations(self._path).revoked:
            mine = self._profile if entry.kind == "profile" else self._binding
            if entry.digest == mine:
                raise SecurityRefusal(
                    "security.revoked",
                    f"the {entry.kind} {entry.digest} is revoked: no new submit (inspect, polling and "
                    "reconcile still work)",
                    ExitClass.EFFECT_UNKNOWN_OR_MANUAL,
                )


def gate_from_environ(environ: Mapping[str, str], *, profile_contract_digest: str, binding_digest: str) -> SubmitGate:
    value = environ.get(REVOCATION_LIST_VARIABLE)
    if not value:
        return OpenGate()
    return RevocationGate(Path(value), profile_contract_digest=profile_contract_digest, binding_digest=binding_digest)


def revoke(path: Path, kind: Literal["profile", "binding"], digest: str, reason: str | None = None) -> None:
    """Append one entry (atomic replace; an existing entry is kept once). Deny-only: there is no
    function that removes an entry; lifting a revocation is an operator's edit, reviewed as such."""
    current = read_revocations(path).revoked if path.exists() else ()
    entry = Revocation(kind=kind, digest=digest, reason=reason)
    entries = current if entry in current else (*current, entry)
    document = RevocationList(schema_id=REVOCATIONS_SCHEMA_ID, revoked=entries)
    # JSON is YAML: the bounded loader reads it back.
    data = json.dumps(document.model_dump(mode="json", exclude_none=True), sort_keys=True, indent=1).encode()
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".revocations-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
