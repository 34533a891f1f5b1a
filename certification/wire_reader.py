"""What one recorded request targets, read from its own bytes by the harness's reader.

Attribution follows the receiver's documented contract, never the sink's choices: a request to the
sync batch endpoint replaces the days of its range (query ``range_start``/``range_end``), an async
job upload those of its multipart range parts; without a range its targets are the days its rows
carry. Its fence value is what the receiver would deduplicate on: the fence header's value or its
query parameter's (read with the personality's key syntax: an RFC 8941 String unquoted, a UUID in
lower case; a value the receiver would refuse is no fence), or the upload's file-name key. A retry
with a fresh key, a fresh request id, a renamed file or a random boundary is therefore
attributed to the same days with a different fence, whatever the sink calls it. A request whose
targets cannot be read (a head-only cut of a body-scoped request, bytes the framer cannot follow)
has unknown targets: the checkers then assume it may target any day.

Values read here are only turned into days and digests; no row or value leaves this module.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
import zlib
from dataclasses import dataclass
from email.message import Message
from urllib.parse import parse_qsl, urlsplit

from certification.dataset import RangeTooLong, day_range
from certification.http_framing import RawRequest
from certification.receiver_contract import MUTATION_ENDPOINTS, Endpoint, Fence, ReceiverContract, filename_key

MAX_DECODED = 64 * 1024 * 1024
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True, slots=True)
class WireFacts:
    endpoint: Endpoint
    method: str
    path: str
    resource: str | None
    targets: frozenset[str] | None
    """Days the request may change at the receiver; None when they cannot be read."""
    target_source: str
    """``range`` (query or multipart parts), ``rows`` (the days its rows carry) or ``unknown``."""
    fence: str | None
    """Digest of the fence value the receiver deduplicates on; None when it carries none."""

    @property
    def mutation(self) -> bool:
        return self.endpoint in MUTATION_ENDPOINTS


def _digest(value: bytes | str) -> str:
    data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    return "sha256:" + hashlib.sha256(data).hexdigest()[:32]


def _range_days(start: str | None, end: str | None) -> frozenset[str] | None:
    if start is None or end is None:
        return None
    try:
        return frozenset(day_range(start, end))
    except RangeTooLong:
        return None  # too long to list: it may change any day
    except ValueError:
        return frozenset()  # the receiver refuses a malformed range: nothing can change


def _content_type(request: RawRequest) -> Message:
    message = Message()
    raw = request.header("content-type")
    message["content-type"] = "" if raw is None else raw.decode("latin-1")
    return message


def multipart_parts(body: bytes, boundary: str) -> list[tuple[str | None, str | None, bytes]]:
    """(name, filename, content) of each part; tolerant of a truncated body (its last part is partial)."""
    delimiter = b"--" + boundary.encode("latin-1")
    parts: list[tuple[str | None, str | None, bytes]] = []
    for segment in body.split(delimiter)[1:]:
        if segment.startswith(b"--"):
            break
        head, separator, content = segment.partition(b"\r\n\r\n")
        if not separator:
            continue
        message = Message()
        for line in head.split(b"\r\n"):
            name, colon, value = line.partition(b":")
            if colon:
                message[name.decode("latin-1").strip()] = value.decode("utf-8", "replace").strip()
        disposition = Message()
        disposition["content-type"] = "x/x; " + (message.get("content-disposition", "") or "").partition(";")[2]
        part_name, filename = disposition.get_param("name"), disposition.get_param("filename")
        # Only plain parameters count: the receiver reads no RFC 2231 ``filename*=`` (a tuple here).
        parts.append((part_name if isinstance(part_name, str) else None,
                      filename if isinstance(filename, str) else None,
                      content[:-2] if content.endswith(b"\r\n") else content))
    return parts


def _decoded(content: bytes, gzipped: bool) -> bytes | None:
    if gzipped or content[:2] == b"\x1f\x8b":
        try:
            decompressor = zlib.decompressobj(wbits=31)
            data = decompressor.decompress(content, MAX_DECODED)
        except (zlib.error, EOFError, gzip.BadGzipFile):
            return None
        return data
    return content


def row_days(content: bytes, date_field: str) -> frozenset[str] | None:
    """The days the rows of a (decoded) body carry in ``date_field``: JSON array, NDJSON or CSV."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    stripped = text.lstrip()
    values: list[object] = []
    try:
        if stripped.startswith("["):
            document = json.loads(stripped)
            values = [row.get(date_field) for row in document if isinstance(row, dict)]
        elif stripped.startswith("{"):
            values = [json.loads(line).get(date_field) for line in stripped.splitlines() if line.strip()]
        else:
            values = [row.get(date_field) for row in csv.DictReader(io.StringIO(text, newline=""))]
    except (ValueError, AttributeError, csv.Error, RecursionError):
        return None
    days = {str(value)[:10] for value in values if isinstance(value, str) and len(value) >= 10}
    return frozenset(days)


def _sf_string(value: str) -> str | None:
    import http_sf  # noqa: PLC0415 - ~0.1 s to import: only sf-string personalities need the parser

    try:
        parsed = http_sf.parse(value.encode("latin-1"), tltype="item")
    except (http_sf.StructuredFieldError, UnicodeEncodeError, ValueError):
        return None
    bare = parsed[0] if isinstance(parsed, tuple) else parsed
    return bare if type(bare) is str and bare else None  # a Token (a str subclass) is not a String


def _key(value: str, syntax: str) -> str | None:
    """The key the receiver reads from one fence value, None for a value it refuses (nothing applies)."""
    if syntax == "sf_string":
        return _sf_string(value)
    if syntax == "uuid":
        return value.lower() if _UUID.fullmatch(value) and value != _ZERO_UUID else None
    return value


def fence_value(request: RawRequest, query: list[tuple[str, str]], rule: Fence) -> str | None:
    """Digest of the key ``rule`` deduplicates on, as the receiver reads it from this request."""
    if rule.query_parameters:
        # An empty value is an unset field; two values are refused: neither is a fence.
        values = [value for name, value in query if name in rule.query_parameters and value != ""]
        key = _key(values[0], rule.key_syntax) if len(values) == 1 else None
        return None if key is None else _digest(key)
    if rule.header is None:
        return None
    headers = request.header_values(rule.header)
    if not headers:
        return None
    if rule.key_syntax in ("sf_string", "uuid"):
        key = _key(headers[0].decode("latin-1"), rule.key_syntax) if len(headers) == 1 else None
        return None if key is None else _digest(key)
    return _digest(b"\n".join(headers))


def _request_line(request: RawRequest) -> tuple[str, str]:
    """Method and target, also from a head the client did not finish (its request line suffices)."""
    if request.head_complete:
        return request.method, request.target
    line, newline, _ = request.head.partition(b"\r\n")
    parts = line.split(b" ")
    if newline and len(parts) == 3:
        return parts[0].decode("latin-1"), parts[1].decode("latin-1")
    return "", ""


def read_request(request: RawRequest, contract: ReceiverContract) -> WireFacts:
    method, target = _request_line(request)
    try:
        split = urlsplit(target)
    except ValueError:  # "//[x": no URL, so no endpoint of the receiver
        split = urlsplit("")
    endpoint = contract.endpoint(method, split.path)
    resource = contract.resource_of(endpoint, split.path)
    fence_rule = contract.fence_for(endpoint)
    query_pairs = parse_qsl(split.query, keep_blank_values=True)
    query = dict(query_pairs)
    targets = None
    if endpoint is Endpoint.SYNC_SUBMIT:  # an upload's range is in its scalar parts only (docs/mock-receiver.md)
        targets = _range_days(query.get("range_start"), query.get("range_end"))
    source = "range" if targets is not None else "unknown"
    fence: str | None = None
    if fence_rule is not None:
        fence = fence_value(request, query_pairs, fence_rule)
    body = bytes(request.body)
    content_type = _content_type(request)
    gzipped = (request.header("content-encoding") or b"").strip().lower() == b"gzip"
    payload: bytes | None = body if request.body_complete else None
    if content_type.get_content_type() == "multipart/form-data":
        boundary = content_type.get_param("boundary")
        payload = None
        if isinstance(boundary, str):
            fields: dict[str, str] = {}
            for name, filename, content in multipart_parts(body, boundary):
                if filename is not None:
                    if fence_rule is not None and fence_rule.type == "filename_key":
                        fence = _digest(filename_key(filename))
                    payload = content if request.body_complete else None
                    gzipped = filename.endswith(".gz")
                elif name is not None:
                    fields[name] = content.decode("utf-8", "replace").strip()
            if targets is None:
                targets = _range_days(fields.get("range_start"), fields.get("range_end"))
                source = "range" if targets is not None else source
    if targets is None and payload is not None and resource in contract.resources:
        decoded = _decoded(payload, gzipped)
        days = None if decoded is None else row_days(decoded, contract.resources[resource].date_field)
        if days:
            targets, source = days, "rows"
    return WireFacts(endpoint=endpoint, method=method, path=split.path, resource=resource,
                     targets=targets, target_source=source, fence=fence)
