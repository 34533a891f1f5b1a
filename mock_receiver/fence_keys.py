"""Reading a synchronous fence's key from a request, as each vendor defines it.

Where the key travels (``location``) and what a key may be (``key_syntax``) are options of the
behaviour's fence (docs/mock-receiver.md, "Mutation fences"):

* ``token``: the receiver's generic key, 1-200 characters of ``A-Z a-z 0-9 . _ : ~ -``;
* ``printable``: Stripe's keys, 1-255 characters, any an HTTP field value can carry (spaces and the
  base64 characters ``+ / =`` included);
* ``sf_string``: the IETF Idempotency-Key draft's header, an RFC 8941 Structured Field Item whose value
  is a String (quoted on the wire: ``Idempotency-Key: "8e03978e"``; parsed with ``http_sf``); the key
  is the unescaped string;
* ``uuid``: Google AIP-155 ``request_id``, a UUID (8-4-4-4-12 hex digits) other than the zero UUID,
  compared in lower case.

A key sent twice (two header lines, or two query parameters) is ambiguous and refused, never resolved
by picking one. No refusal quotes the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import http_sf
from starlette.requests import Request

from mock_receiver.behaviour import FenceType, SyncFence
from mock_receiver.problems import ProblemError

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:~-]{0,199}\Z")
# RFC 9110 field-value characters (HTAB, SP, VCHAR, obs-text), as Starlette decodes them (Latin-1).
_PRINTABLE = re.compile(r"[\t\x20-\x7e\x80-\xff]{1,255}\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
MAX_SF_STRING = 255


@dataclass(frozen=True)
class FenceKey:
    key: str | None
    """The key the fence reads (None: the request carries none)."""
    logged: str | None
    """What the request log keeps as ``idempotency_key``: the key, or an ignored header's value."""


def _bad_key(status: int, where: str, rule: str) -> ProblemError:
    return ProblemError(status, "bad_fence_key", "Bad request" if status == 400 else "Unprocessable content",
                        f"{where} must be {rule}")


def _twice(where: str) -> ProblemError:
    return ProblemError(400, "duplicate_fence_key", "Bad request",
                        f"{where} appears more than once; a request carries one key")


def check_key(raw: str, syntax: str, where: str) -> str:
    """The key ``raw`` stands for under ``syntax``, or a refusal (422 for ``token``, as before the
    vendor syntaxes existed; 400 for the vendors', as each vendor answers)."""
    if syntax == "token":
        if not _TOKEN.match(raw):
            raise _bad_key(422, where, "1-200 characters of A-Z a-z 0-9 . _ : ~ -")
        return raw
    if syntax == "printable":
        if not _PRINTABLE.match(raw):
            raise _bad_key(400, where, "1-255 characters")
        return raw
    if syntax == "sf_string":
        return _sf_string(raw, where)
    if not _UUID.match(raw) or raw == _ZERO_UUID:
        raise _bad_key(400, where, "a UUID other than the zero UUID")
    return raw.lower()


def _sf_string(raw: str, where: str) -> str:
    rule = f"a Structured Field String (RFC 8941: quoted, at most {MAX_SF_STRING} characters)"
    try:
        parsed = http_sf.parse(raw.encode("latin-1"), tltype="item")
    except (http_sf.StructuredFieldError, UnicodeEncodeError, ValueError):
        raise _bad_key(400, where, rule) from None
    # An Item is (bare value, parameters); parameters carry nothing a key needs and are ignored.
    bare = parsed[0] if isinstance(parsed, tuple) else parsed
    if type(bare) is not str or not 0 < len(bare) <= MAX_SF_STRING:  # a Token is a str subclass: refused
        raise _bad_key(400, where, rule)
    return bare


def read_fence_key(request: Request, fence: SyncFence) -> FenceKey:
    """The fence key of ``request`` (or the ignored header logged for forensics)."""
    reads_key = fence.type in (FenceType.IDEMPOTENCY_KEY, FenceType.FINGERPRINT_LEDGER)
    if reads_key and fence.location == "query":
        names = fence.query_parameters or []
        # An empty value is an unset field (proto3): no key, as Google's APIs read it.
        values = [value for name, value in request.query_params.multi_items() if name in names and value != ""]
        if len(values) > 1:
            raise _twice(f"the request id ({' or '.join(names)})")
        if not values:
            return FenceKey(None, _ignored_header(request, fence.header))
        key = check_key(values[0], fence.key_syntax, f"the {names[0]} parameter")
        return FenceKey(key, key)
    headers = request.headers.getlist(fence.header)
    if not reads_key:
        return FenceKey(None, _ignored_header(request, fence.header))
    if len(headers) > 1:
        raise _twice(f"the {fence.header} header")
    if not headers:
        return FenceKey(None, None)
    key = check_key(headers[0], fence.key_syntax, f"the {fence.header} header")
    return FenceKey(key, key)


def _ignored_header(request: Request, header: str) -> str | None:
    """A key header this fence does not read is still logged, when it is one well-formed token."""
    values = request.headers.getlist(header)
    if len(values) == 1 and _TOKEN.match(values[0]):
        return values[0]
    return None
