"""Request body decoding: JSON array, NDJSON, CSV, gzip and one-file multipart.

Every failure is a ProblemError with a stable slug; nothing here echoes payload
content into an error message.
"""

from __future__ import annotations

import csv
import io
import json
import zlib
from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from mock_receiver import strict_json
from mock_receiver.behaviour import Limits
from mock_receiver.canonical import Scalar, bytes_digest, encode_row
from mock_receiver.problems import ProblemError, bad_request

_JSON_TYPES = {"application/json"}
_NDJSON_TYPES = {"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"}
_CSV_TYPES = {"text/csv", "application/csv"}
_GZIP_TYPES = {"application/gzip", "application/x-gzip"}
_MAX_SCALAR_BYTES = 1024


@dataclass
class Submission:
    rows: list[dict[str, Scalar]]
    encoded: list[bytes]
    decoded_digest: str
    """Digest of the decoded payload bytes (file part, or body after Content-Encoding)."""
    media_format: str
    scalars: dict[str, str] = field(default_factory=dict)
    filename: str | None = None


def media_essence(content_type: str | None) -> str:
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def normalised_media_type(content_type: str | None) -> str | None:
    """A media type as RFC 9110 compares it: type/subtype and parameter names case-insensitive, a
    quoted and an unquoted value equal, the charset value case-insensitive, parameter order free."""
    if content_type is None:
        return None
    essence, params = parse_options_header(content_type)
    pairs = []
    for name, value in params.items():
        text_name = name.decode("latin-1").lower()
        text_value = value.decode("latin-1")
        pairs.append((text_name, text_value.lower() if text_name == "charset" else text_value))
    return json.dumps([essence.decode("latin-1").lower(), sorted(pairs)])


def normalised_coding(content_encoding: str | None) -> str | None:
    """Content codings are case-insensitive tokens (RFC 9110 section 8.4.1); list whitespace is free."""
    if content_encoding is None:
        return None
    return ",".join(part.strip().lower() for part in content_encoding.split(",") if part.strip())


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error:
        raise bad_request("malformed_gzip", "the gzip stream is not valid") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise ProblemError(413, "decoded_too_large", "Content too large",
                           f"decoded payload exceeds {limit} bytes")
    if not inflater.eof or inflater.unused_data:
        raise bad_request("malformed_gzip", "the gzip stream is truncated or has trailing data")
    return out


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request("invalid_utf8", "payload is not valid UTF-8") from None


def _check_row(candidate: object, index: int) -> dict[str, Scalar]:
    if not isinstance(candidate, dict):
        raise ProblemError(422, "row_not_object", "Unprocessable content", f"record {index} is not an object")
    for value in candidate.values():
        if isinstance(value, dict | list):
            raise ProblemError(422, "nested_value", "Unprocessable content",
                               f"record {index} has a nested value; rows are flat (JSON depth at most 2)")
    return candidate


def parse_json_rows(data: bytes) -> list[dict[str, Scalar]]:
    document = strict_json.loads(_text(data))
    if not isinstance(document, list):
        raise ProblemError(422, "not_an_array", "Unprocessable content", "a JSON body must be an array of rows")
    return [_check_row(item, index) for index, item in enumerate(document)]


def parse_ndjson_rows(data: bytes) -> list[dict[str, Scalar]]:
    rows: list[dict[str, Scalar]] = []
    # Records end at "\n" only: str.splitlines() would also split at U+2028, U+0085 and others,
    # which may legally appear raw inside JSON strings.
    for raw_line in _text(data).split("\n"):
        line = raw_line.removesuffix("\r")
        if line.strip():
            rows.append(_check_row(strict_json.loads(line), len(rows)))
    return rows


def parse_csv_rows(data: bytes) -> list[dict[str, Scalar]]:
    text = _text(data).removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return []
        if len(set(header)) != len(header) or any(not name for name in header):
            raise bad_request("malformed_csv", "CSV header names must be unique and non-empty")
        rows: list[dict[str, Scalar]] = []
        for record in reader:
            if not record:
                continue
            if len(record) != len(header):
                raise bad_request("malformed_csv", f"CSV record {len(rows)} has {len(record)} fields, "
                                                   f"header has {len(header)}")
            rows.append(dict(zip(header, record, strict=True)))
        return rows
    except csv.Error:
        raise bad_request("malformed_csv", "the CSV text is not well formed") from None


def _sniff(data: bytes) -> str:
    head = data.lstrip()[:1]
    if head == b"[":
        return "json"
    if head == b"{":
        return "ndjson"
    return "csv"


def _format_of(content_type: str, filename: str | None) -> tuple[str, bool]:
    """(format, gzipped) from a media type and an optional file name."""
    name = (filename or "").lower()
    gzipped = content_type in _GZIP_TYPES or name.endswith(".gz")
    stem = name.removesuffix(".gz")
    if content_type in _JSON_TYPES or stem.endswith(".json"):
        return "json", gzipped
    if content_type in _NDJSON_TYPES or stem.endswith((".ndjson", ".jsonl")):
        return "ndjson", gzipped
    if content_type in _CSV_TYPES or stem.endswith(".csv"):
        return "csv", gzipped
    if gzipped:
        return "sniff", True
    raise ProblemError(415, "unsupported_media_type", "Unsupported media type",
                       "send application/json, application/x-ndjson, text/csv, application/gzip "
                       "or multipart/form-data")


def rows_from_bytes(data: bytes, fmt: str, limits: Limits) -> tuple[list[dict[str, Scalar]], str]:
    if fmt == "sniff":
        fmt = _sniff(data)
    parser = {"json": parse_json_rows, "ndjson": parse_ndjson_rows, "csv": parse_csv_rows}[fmt]
    rows = parser(data)
    if len(rows) > limits.max_rows:
        raise ProblemError(413, "too_many_rows", "Content too large", f"more than {limits.max_rows} rows")
    return rows, fmt


def encode_rows(rows: list[dict[str, Scalar]]) -> list[bytes]:
    try:
        return [encode_row(row) for row in rows]
    except UnicodeEncodeError:
        # JSON allows an escaped lone surrogate ("\ud800"); it is not Unicode text and has no UTF-8 form.
        raise bad_request("invalid_unicode", "a string holds a lone surrogate") from None


@dataclass
class _Part:
    headers: dict[bytes, bytes] = field(default_factory=dict)
    data: bytearray = field(default_factory=bytearray)


def split_multipart(body: bytes, content_type: str, limits: Limits) -> list[tuple[str, str | None, str, bytes]]:
    """(name, filename, content type, data) of every part; malformed framing is a 400."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise bad_request("malformed_multipart", "multipart body without a boundary")
    parts: list[_Part] = []
    header_field = bytearray()
    header_value = bytearray()
    ended = []

    def on_part_begin() -> None:
        parts.append(_Part())

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header_field.extend(data[start:end])

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header_value.extend(data[start:end])

    def on_header_end() -> None:
        parts[-1].headers[bytes(header_field).lower()] = bytes(header_value)
        header_field.clear()
        header_value.clear()

    def on_part_data(data: bytes, start: int, end: int) -> None:
        parts[-1].data.extend(data[start:end])

    callbacks = {"on_part_begin": on_part_begin, "on_header_field": on_header_field,
                 "on_header_value": on_header_value, "on_header_end": on_header_end,
                 "on_part_data": on_part_data, "on_end": lambda: ended.append(True)}
    try:
        parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
        parser.write(body)
        parser.finalize()
    except (MultipartParseError, ValueError, IndexError):
        raise bad_request("malformed_multipart", "the multipart body is not well formed") from None
    if not ended:
        raise bad_request("malformed_multipart", "the multipart body ends before its closing boundary")
    result: list[tuple[str, str | None, str, bytes]] = []
    for part in parts:
        disposition, options = parse_options_header(part.headers.get(b"content-disposition", b""))
        if disposition != b"form-data" or b"name" not in options:
            raise bad_request("malformed_multipart", "every part needs Content-Disposition: form-data; name=")
        try:
            name = options[b"name"].decode("utf-8")
            filename = options[b"filename"].decode("utf-8") if b"filename" in options else None
            part_type = part.headers.get(b"content-type", b"").decode("latin-1")
        except UnicodeDecodeError:
            raise bad_request("malformed_multipart", "part names must be UTF-8") from None
        result.append((name, filename, media_essence(part_type), bytes(part.data)))
    return result


def decode_multipart(body: bytes, content_type: str, limits: Limits) -> Submission:
    files: list[tuple[str, str | None, str, bytes]] = []
    scalars: dict[str, str] = {}
    for name, filename, part_type, data in split_multipart(body, content_type, limits):
        if filename is not None:
            if part_type.startswith("multipart/"):
                raise bad_request("nested_multipart", "nested multipart is not supported")
            files.append((name, filename, part_type, data))
            continue
        if name in scalars or len(scalars) >= limits.max_scalar_parts or len(data) > _MAX_SCALAR_BYTES:
            raise bad_request("bad_scalar_parts", "scalar parts must be unique, few and short")
        scalars[name] = _text(data)
    if len(files) != 1:
        raise bad_request("file_part_count", f"exactly one file part is required, got {len(files)}")
    _, filename, part_type, data = files[0]
    fmt, gzipped = _format_of(part_type, filename)
    if gzipped:
        data = gunzip_bounded(data, limits.max_decoded_bytes)
    if len(data) > limits.max_decoded_bytes:
        raise ProblemError(413, "decoded_too_large", "Content too large", "decoded payload too large")
    rows, fmt = rows_from_bytes(data, fmt, limits)
    return Submission(rows=rows, encoded=encode_rows(rows), decoded_digest=bytes_digest(data),
                      media_format=f"multipart/{fmt}", scalars=scalars, filename=filename)


def decode_body(body: bytes, content_type: str | None, content_encoding: str | None,
                limits: Limits) -> Submission:
    essence = media_essence(content_type)
    if essence == "multipart/form-data":
        if content_encoding:
            raise bad_request("unsupported_encoding", "multipart bodies take no Content-Encoding")
        return decode_multipart(body, content_type or "", limits)
    encoding = (content_encoding or "").strip().lower()
    if encoding not in ("", "identity", "gzip"):
        raise ProblemError(415, "unsupported_encoding", "Unsupported media type", "only gzip encoding")
    fmt, gzipped = _format_of(essence, None)
    data = body
    if encoding == "gzip":  # the transfer coding first, then a gzip media type inside it
        data = gunzip_bounded(data, limits.max_decoded_bytes)
    if gzipped:
        data = gunzip_bounded(data, limits.max_decoded_bytes)
    rows, fmt = rows_from_bytes(data, fmt, limits)
    return Submission(rows=rows, encoded=encode_rows(rows), decoded_digest=bytes_digest(data),
                      media_format=fmt)
