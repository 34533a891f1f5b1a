"""Reading the expected secrets the ``auth:`` section points at (an environment variable or a file).

The rules match what a client's ``env://`` / ``file://`` reference conventionally means (a file's one
trailing newline is not part of the secret), so the same file or variable serves both sides. This is
written here, not imported: the receiver shares no code with the sink it certifies. Errors name the
variable or the file, never a value.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_SECRET_BYTES = 65_536


class AuthConfigError(ValueError):
    """An ``auth:`` section whose secret cannot be read (the message names where, never what)."""


def read_env_secret(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise AuthConfigError(f"environment variable {name} is not set")
    if not value:
        raise AuthConfigError(f"environment variable {name} is empty")
    return value


def read_file_secret(path_text: str) -> str:
    path = Path(path_text)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as error:
        raise AuthConfigError(f"secret file {path}: {error.strerror or error.__class__.__name__}") from None
    try:
        # Checked on the open descriptor: a FIFO or device is refused before a read could block.
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise AuthConfigError(f"secret file {path} is not a regular file")
        raw = os.read(descriptor, MAX_SECRET_BYTES + 1)
    except OSError as error:
        raise AuthConfigError(f"secret file {path}: {error.strerror or error.__class__.__name__}") from None
    finally:
        os.close(descriptor)
    if len(raw) > MAX_SECRET_BYTES:
        raise AuthConfigError(f"secret file {path} is larger than {MAX_SECRET_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthConfigError(f"secret file {path} is not UTF-8") from None
    text = text.removesuffix("\n").removesuffix("\r")
    if not text:
        raise AuthConfigError(f"secret file {path} is empty")
    return text


def read_secret(env: str | None, file: str | None, what: str) -> str:
    """The secret from exactly one of ``env`` / ``file`` (the schema guarantees one is set)."""
    try:
        if env is not None:
            return read_env_secret(env)
        if file is not None:
            return read_file_secret(file)
    except AuthConfigError as error:
        raise AuthConfigError(f"auth: the {what}: {error}") from None
    raise AuthConfigError(f"auth: the {what} has no source")
