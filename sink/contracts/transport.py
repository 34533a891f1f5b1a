"""Transport evidence: what one mutation or poll request proved about how far it got.

Seed: "Safe retry and remote fencing" (DNS, connect, TLS, write, read, idle and total-request
timeouts classify distinctly; a transport error never proves that the receiver did not mutate)
and FIELD-NOTES ("httpx / httpcore"): the phase comes from httpcore's trace events, never from
the exception type, and REQUEST_NOT_STARTED is provable only when the failure happened before
``send_request_headers`` started.

These are the shared types between the transport adapter (``sink/transport``), which produces
them, and the runtime policies (``sink/runtime``), which decide effect certainty and retry from
them. Pure data: no I/O, no HTTP library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.profile_request import FORBIDDEN_PROFILE_HEADERS
from sink.contracts.secret import SecretValue

JsonScalar = str | int | bool | None
REQUEST_METHODS = frozenset({"GET", "POST", "PUT", "PATCH"})
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}\Z")
_HEADER_VALUE = re.compile(r"^(?:[\x21-\x7e](?:[\x20-\x7e]{0,1022}[\x21-\x7e])?)?\Z")


class TransportPhase(StrEnum):
    """Ordered steps of one HTTP/1.1 exchange, as httpcore's trace names them."""

    DNS = "dns"
    CONNECT = "connect"
    TLS = "tls"
    POOL = "pool"
    REQUEST_HEADERS = "request_headers"
    REQUEST_BODY = "request_body"
    RESPONSE_HEADERS = "response_headers"
    RESPONSE_BODY = "response_body"
    COMPLETE = "complete"


class FailureKind(StrEnum):
    """Why an exchange did not complete. Each timeout of the profile's vector is its own kind."""

    DNS_TIMEOUT = "dns_timeout"
    DNS_ERROR = "dns_error"
    CONNECT_TIMEOUT = "connect_timeout"
    CONNECT_ERROR = "connect_error"
    TLS_TIMEOUT = "tls_timeout"
    TLS_ERROR = "tls_error"
    POOL_TIMEOUT = "pool_timeout"
    WRITE_TIMEOUT = "write_timeout"
    WRITE_ERROR = "write_error"
    READ_TIMEOUT = "read_timeout"
    READ_ERROR = "read_error"
    IDLE_TIMEOUT = "idle_timeout"
    REQUEST_TOTAL_TIMEOUT = "request_total_timeout"
    PROTOCOL_ERROR = "protocol_error"
    """The peer sent something that is not HTTP/1.1 (or broke framing) without a socket error."""
    RESPONSE_TOO_LARGE = "response_too_large"
    RESPONSE_UNPARSEABLE = "response_unparseable"
    REDIRECT_REFUSED = "redirect_refused"
    AUTHORITY_REFUSED = "authority_refused"
    CREDENTIAL_UNAVAILABLE = "credential_unavailable"
    BODY_UNAVAILABLE = "body_unavailable"
    """The body source failed, or its bytes did not match the sealed length/digest: the request
    was aborted before its last byte was handed to the kernel."""
    CONNECTION_CLOSED = "connection_closed"
    """The peer closed the connection cleanly (FIN) before the response was complete."""


class SendCertainty(StrEnum):
    """How far the request may have got. Only NOT_STARTED is proof of no remote effect."""

    NOT_STARTED = "request_not_started"
    """No request byte could have reached the peer (failure before request headers started)."""
    MAY_HAVE_REACHED_PEER = "may_have_reached_peer"
    """Request headers started (or later) and no complete response arrived: effect unknown."""
    RESPONSE_RECEIVED = "response_received"
    """A complete response head (and a bounded body) arrived."""


@dataclass(frozen=True, slots=True)
class TransportEvidence:
    certainty: SendCertainty
    last_phase_started: TransportPhase | None
    failure: FailureKind | None
    request_bytes_to_kernel: int
    """Bytes handed to the local kernel (a counting network backend); not proof of receipt."""
    trace_steps: tuple[str, ...]
    """httpcore trace event names in order, e.g. ``http11.send_request_headers.started``."""
    elapsed_ms: int
    resolved_address: str | None = None
    """The IP address the connection used (resolved by the transport under ``dns_ms``)."""
    response_status: int | None = None
    """Status of a response whose head arrived but whose body did not complete."""
    response_bytes_received: int = 0
    """Response bytes read from the connection (head and body)."""

    def __post_init__(self) -> None:
        if self.certainty is SendCertainty.NOT_STARTED and self.request_bytes_to_kernel:
            raise ValueError("request bytes reached the kernel: the request cannot be NOT_STARTED")
        if self.certainty is SendCertainty.RESPONSE_RECEIVED and self.failure is not None:
            raise ValueError("a received response carries no transport failure")


@dataclass(frozen=True, slots=True)
class ResponseEvidence:
    """A bounded, allowlisted view of a response: never the raw body."""

    status: int
    headers: Mapping[str, str]
    """Allowlisted header names (lower case) with bounded values: retry-after, location,
    operation-location, content-type, idempotent-replayed and the like."""
    body_size: int
    body_digest: str
    """``sha256:<hex>`` of the bytes read (bounded)."""
    scalars: Mapping[str, JsonScalar] = field(default_factory=dict)
    """Values extracted by RFC 6901 pointer (the profile's receipt/counter/state extractors),
    keyed by pointer; only bounded scalars (strings truncated never: over-long is refused)."""
    parse_problem: str | None = None
    """Stable reason when the body was not a bounded JSON document (too deep, too many fields,
    over-long string, not JSON): the scalars are then empty."""


@dataclass(frozen=True, slots=True)
class TransportOutcome:
    evidence: TransportEvidence
    response: ResponseEvidence | None

    def __post_init__(self) -> None:
        received = self.evidence.certainty is SendCertainty.RESPONSE_RECEIVED
        if received != (self.response is not None):
            raise ValueError("a response is present exactly when the certainty is RESPONSE_RECEIVED")


@runtime_checkable
class BodySource(Protocol):
    """The sealed wire body, streamed: never held whole in memory."""

    @property
    def length(self) -> int:
        """Exact byte length measured at sealing (sent as Content-Length)."""

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the exact bytes, as sealed."""

    def chunks(self) -> Iterator[bytes]:
        """The bytes, in bounded chunks; raises if they do not match ``digest``/``length``."""


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """A fully rendered request, relative to the binding's fixed authority. No credential here:
    the transport adds authentication from the credential seam at send time."""

    method: str
    path_and_query: str
    semantic_headers: tuple[tuple[str, str], ...]
    content_type: str | None
    body: BodySource | None
    extract_pointers: tuple[str, ...] = ()
    extract_headers: tuple[str, ...] = ()
    """Header names (beyond the standard allowlist) whose bounded values become evidence: the
    profile's header extractors."""

    def __post_init__(self) -> None:
        if not self.path_and_query.startswith("/") or self.path_and_query.startswith("//"):
            raise ValueError("the path must be relative to the bound authority")
        if self.method not in REQUEST_METHODS:
            raise ValueError("the method must be GET, POST, PUT or PATCH")
        for name, value in self.semantic_headers:
            # Messages never repeat a value: it is data, and could be anything.
            if not _HEADER_NAME.fullmatch(name) or name.lower() in FORBIDDEN_PROFILE_HEADERS:
                raise ValueError("a semantic header name is not an allowed token (credential and framing "
                                 "headers come from the transport)")
            if not _HEADER_VALUE.fullmatch(value):
                raise ValueError("a semantic header value is not visible ASCII")
        if self.content_type is not None and not _HEADER_VALUE.fullmatch(self.content_type):
            raise ValueError("the content type is not visible ASCII")


@dataclass(frozen=True, slots=True)
class ResponseBounds:
    """Bounds of response parsing; beyond any of them the body is not evidence (``parse_problem``)."""

    max_body_bytes: int = 1_048_576
    max_depth: int = 32
    max_fields: int = 10_000
    """Upper bound on the JSON values in the document (members, elements and containers)."""
    max_string_length: int = 4_096
    max_header_value_length: int = 512

    def __post_init__(self) -> None:
        if min(self.max_body_bytes, self.max_depth, self.max_fields, self.max_string_length,
               self.max_header_value_length) < 1:
            raise ValueError("response bounds must be positive")


@runtime_checkable
class RestTransportPort(Protocol):
    """Sends one prepared request to the binding's fixed authority and says how far it got.

    Never raises for a network condition, a body-source failure or an unavailable credential:
    those are evidence in the returned outcome."""

    def send(
        self, request: PreparedRequest, *, timeouts: TimeoutVector, bounds: ResponseBounds | None = None,
        observer: Callable[[str], None] | None = None,
    ) -> TransportOutcome:
        """``observer`` is told each httpcore trace step name as it happens (request-boundary
        failpoints hang on it)."""

    def close(self) -> None: ...


class CredentialUnavailable(Exception):
    """A credential reference could not be resolved. ``reason`` is a stable code; the message
    never contains the secret, and never the reference's path or variable name either."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"credential unavailable: {reason}")
        self.reason = reason


@runtime_checkable
class CredentialResolverPort(Protocol):
    """Resolves a binding's ``credential_ref`` (``env://NAME``, ``file:///path``, ``vault://…``)
    into a ``SecretValue``; raises ``CredentialUnavailable``. Called by each process itself, at
    the last moment: a resolved secret is never handed to another process or stored."""

    def resolve(self, credential_ref: str) -> SecretValue: ...
