"""TLS and network policies that a binding names by ``tls_policy_ref`` / ``network_policy_ref``
(seed: "Security, timeout, and operations policy": verified TLS, authority allowlisting,
DNS-rebinding defence, proxy governance).

A policy is an immutable, versioned document (``name@version``); its identity is what enters the
binding semantics digest, so a changed policy is a new version, never an edit. Pure data: the
loading lives in ``sink.security.policies`` and the enforcement in ``sink.transport``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from sink.contracts._base import ContractModel, Description, contract_error

_POLICY_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,126}@[1-9][0-9]{0,5}\Z")
_FILE_REF = re.compile(r"^file:///[A-Za-z0-9_./-]{1,254}\Z")


def _check_id(value: str) -> str:
    if not _POLICY_ID.fullmatch(value):
        raise contract_error("contract.invalid_value", "a policy id looks like 'name@version'")
    return value


class TlsPolicy(ContractModel):
    """How the sink verifies a receiver. Verification can not be switched off: there is no field
    for it. ``ca_bundle_ref: system`` trusts the platform store; a ``file:///`` reference trusts
    exactly that PEM bundle (a private CA)."""

    id: str
    description: Description
    ca_bundle_ref: str = "system"
    minimum_version: Literal["TLSv1.2", "TLSv1.3"] = "TLSv1.2"

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id(value)

    @field_validator("ca_bundle_ref")
    @classmethod
    def _ca_bundle(cls, value: str) -> str:
        if value != "system" and (not _FILE_REF.fullmatch(value) or "/../" in value or "/./" in value):
            raise contract_error("contract.invalid_value", "ca_bundle_ref is 'system' or a file:///path reference")
        return value


class NetworkPolicy(ContractModel):
    """Which addresses a binding's host names may resolve to (an SSRF and DNS-rebinding fence),
    and which other origins may serve an OAuth token endpoint."""

    id: str
    description: Description
    allowed_networks: tuple[str, ...] = Field(min_length=1, max_length=64)
    token_origins: tuple[str, ...] = Field(default=(), max_length=16)
    """Origins (``https://host[:port]``) an OAuth token endpoint may use besides the binding's own."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id(value)

    @field_validator("allowed_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for network in value:
            try:
                ipaddress.ip_network(network, strict=True)
            except ValueError:
                raise contract_error("contract.invalid_value",
                                     "allowed_networks entries are CIDR networks (host bits zero)") from None
        return value

    @field_validator("token_origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for origin in value:
            parts = urlsplit(origin)
            if parts.scheme != "https" or not parts.hostname or "@" in parts.netloc or parts.path not in ("", "/") \
                    or parts.query or parts.fragment:
                raise contract_error("contract.invalid_value", "token_origins entries are https origins")
        return value

    def allows(self, address: str) -> bool:
        """Whether one resolved IP address is inside an allowed network (IPv4-mapped IPv6 is
        compared as the IPv4 address it carries, so ``::ffff:10.0.0.1`` cannot dodge a rule)."""
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            return False
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            parsed = parsed.ipv4_mapped
        return any(parsed in ipaddress.ip_network(network) for network in self.allowed_networks)
