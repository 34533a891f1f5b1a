"""``JournalLocator``: where a delivery's durable authority lives, without a secret in it.

A trigger's keyword arguments are stored in Airflow's metadata database and shown in its UI, so
they carry only an operation id and this locator: the journal (``sqlite:/ABS/PATH`` or a
``postgresql://user@host:port/db`` DSN whose password comes from libpq's environment, ``PGPASSWORD``
or a password file, never from the DSN), the artifact store and the MAY_ATTEMPT marker store
directories, and the journal's PostgreSQL schema. Anything that could hold a secret is refused
with a stable code before it is stored anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import parse_qsl, urlsplit

MAX_LOCATOR_CHARS = 1024
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")
_FIELDS = ("journal", "artifacts", "markers", "pg_schema")
# libpq connection parameters that name no secret (paths and switches only). ``password`` and
# ``sslpassword`` are secrets; every parameter not listed is refused rather than guessed about.
SAFE_DSN_PARAMETERS = frozenset({
    "connect_timeout", "sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl", "passfile",
    "application_name", "target_session_attrs", "keepalives", "keepalives_idle",
})


class LocatorError(ValueError):
    """A locator that cannot be stored or used; ``code`` is stable, the message names no value."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"error[{code}] {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class JournalLocator:
    journal: str
    artifacts: str
    markers: str
    pg_schema: str = "restproof_journal"

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str) or not value or len(value) > MAX_LOCATOR_CHARS:
                raise LocatorError("airflow.locator.invalid", f"{name} must be 1-{MAX_LOCATOR_CHARS} characters")
            if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
                raise LocatorError("airflow.locator.invalid", f"{name} holds a control character")
        if not _SCHEMA.fullmatch(self.pg_schema):
            raise LocatorError("airflow.locator.invalid", "pg_schema must be a plain lower-case identifier")
        for name in ("artifacts", "markers"):
            if not PurePosixPath(getattr(self, name)).is_absolute():
                raise LocatorError("airflow.locator.invalid", f"{name} must be an absolute path")
        if self.kind == "sqlite":
            if not PurePosixPath(self.journal.removeprefix("sqlite:")).is_absolute():
                raise LocatorError("airflow.locator.invalid", "a sqlite: journal must name an absolute path")
        else:
            _check_dsn(self.journal)

    @property
    def kind(self) -> str:
        """``sqlite`` or ``postgresql``."""
        if self.journal.startswith("sqlite:"):
            return "sqlite"
        if self.journal.startswith(("postgresql://", "postgres://")):
            return "postgresql"
        raise LocatorError("airflow.locator.invalid", "journal must be sqlite:/ABS/PATH or a postgresql:// DSN")

    def as_kwargs(self) -> dict[str, str]:
        """The JSON-serializable form a trigger stores."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_kwargs(cls, value: object) -> JournalLocator:
        """Strict inverse of ``as_kwargs``: exactly these keys, every value a string."""
        if isinstance(value, JournalLocator):
            return value
        if not isinstance(value, Mapping):
            raise LocatorError("airflow.locator.invalid", "a journal locator is a mapping of strings")
        unknown = sorted(str(key) for key in value if key not in _FIELDS)
        if unknown:
            raise LocatorError("airflow.locator.unknown_field", f"unknown locator field(s): {', '.join(unknown)}")
        missing = [name for name in _FIELDS[:3] if name not in value]
        if missing:
            raise LocatorError("airflow.locator.invalid", f"missing locator field(s): {', '.join(missing)}")
        fields = {str(key): item for key, item in value.items()}
        if not all(isinstance(item, str) for item in fields.values()):
            raise LocatorError("airflow.locator.invalid", "every locator field is a string")
        return cls(**{key: str(item) for key, item in fields.items()})


def _check_dsn(dsn: str) -> None:
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError:
        raise LocatorError("airflow.locator.invalid", "the journal DSN is not a valid URL") from None
    if parts.password is not None or (parts.username is not None and ":" in (parts.netloc.rpartition("@")[0])):
        raise LocatorError("airflow.locator.secret_in_dsn",
                           "the journal DSN holds a password; give it to libpq through PGPASSWORD or a "
                           "password file instead")
    if not parts.hostname or port == 0 or parts.fragment:
        raise LocatorError("airflow.locator.invalid", "the journal DSN needs a host (and no fragment)")
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if name not in SAFE_DSN_PARAMETERS:
            code = "airflow.locator.secret_in_dsn" if "password" in name.lower() else "airflow.locator.unknown_field"
            raise LocatorError(code, f"the journal DSN parameter {name[:40]!r} is not allowed in a locator")
