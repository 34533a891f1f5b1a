"""``SecurityRefusal``: a wire-security rule refused to build or use a transport. ``code`` is stable
(``transport.tls.*``, ``transport.network.*``, ``transport.auth.*``, ``security.revoked``); the
message names policies and digests only, never a secret, a secret's locator or a payload value."""

from __future__ import annotations

from sink.contracts.errors import ExitClass


class SecurityRefusal(Exception):
    def __init__(self, code: str, message: str, exit_class: ExitClass = ExitClass.INVALID_INPUT) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.detail = message
        self.exit_class = exit_class
