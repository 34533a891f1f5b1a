"""Where ``tls_policy_ref`` and ``network_policy_ref`` are looked up.

Two built-in policies serve the loopback bindings every scenario uses (``loopback-plaintext@1``:
platform CA store, TLS 1.2+; ``loopback-only@1``: 127.0.0.0/8 and ::1). Any other policy is a file
in the policy directory (``RESTPROOF_POLICY_DIR``): ``tls/<name>@<version>.yaml`` and
``network/<name>@<version>.yaml``, each naming its own ``id``. An unknown policy refuses the
delivery (exit 2) before anything is opened: a binding never falls back to a laxer default.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from sink.contracts._base import ContractModel
from sink.contracts.security_policy import NetworkPolicy, TlsPolicy
from sink.security.errors import SecurityRefusal

POLICY_DIR_VARIABLE = "RESTPROOF_POLICY_DIR"
PolicyT = TypeVar("PolicyT", bound=ContractModel)

BUILTIN_TLS = {
    "loopback-plaintext@1": TlsPolicy(id="loopback-plaintext@1", description="Loopback receivers; https, "
                                      "when used, is verified against the platform store."),
}
BUILTIN_NETWORK = {
    "loopback-only@1": NetworkPolicy(id="loopback-only@1", description="The loopback interface only.",
                                     allowed_networks=("127.0.0.0/8", "::1/128")),
}


class PolicyStore:
    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> PolicyStore:
        value = environ.get(POLICY_DIR_VARIABLE)
        return cls(Path(value) if value else None)

    def tls(self, ref: str) -> TlsPolicy:
        return self._find(ref, "tls", TlsPolicy, BUILTIN_TLS)

    def network(self, ref: str) -> NetworkPolicy:
        return self._find(ref, "network", NetworkPolicy, BUILTIN_NETWORK)

    def _find(self, ref: str, kind: str, model: type[PolicyT], builtin: Mapping[str, PolicyT]) -> PolicyT:
        code = f"transport.{kind}.policy_unknown"
        if self._directory is not None:
            path = self._directory / kind / f"{ref}.yaml"
            if "/" not in ref and path.is_file():
                return self._load(path, ref, kind, model)
        if ref in builtin:
            return builtin[ref]
        raise SecurityRefusal(code, f"no {kind} policy {ref} (built in, or in ${POLICY_DIR_VARIABLE}/{kind}/)")

    @staticmethod
    def _load(path: Path, ref: str, kind: str, model: type[PolicyT]) -> PolicyT:
        # Only a policy directory's file is YAML (the built-in policies are models): a process that
        # uses built-in policies does not import PyYAML (start-up cost).
        from sink.bounded_yaml import BoundedYamlError, load_bounded_yaml_file  # noqa: PLC0415

        code = f"transport.{kind}.policy_invalid"
        try:
            document = load_bounded_yaml_file(path, max_bytes=64 * 1024)
            policy = model.model_validate(document)
        except BoundedYamlError as exc:
            raise SecurityRefusal(code, f"{kind} policy {ref} is not bounded YAML ({exc.code})") from None
        except ValidationError as exc:
            fields = sorted({".".join(str(part) for part in error["loc"]) for error in exc.errors()})
            raise SecurityRefusal(code, f"{kind} policy {ref} is invalid at {', '.join(fields)}") from None
        if getattr(policy, "id", None) != ref:
            raise SecurityRefusal(code, f"{kind} policy file {ref}.yaml names another id")
        return policy
