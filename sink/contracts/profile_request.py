"""Operation profile, request part: method, path/query/headers and body envelope.

V1 supports exactly one sealed payload per request: a JSON array, NDJSON or CSV body (optionally
gzip-compressed), or a multipart upload with exactly one payload part plus bounded scalar parts.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from sink.contracts._base import ContractModel, contract_error
from sink.contracts.symbols import REQUEST_SYMBOLS, TemplateLocation, template_symbols

ALLOWED_METHODS = ("POST", "PUT", "PATCH")
BODY_TYPES = ("json_array", "ndjson", "csv", "multipart_file")
MAX_HEADERS = 16
MAX_QUERY = 16
MAX_SCALAR_PARTS = 8

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}\Z")
_QUERY_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
_PART_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\Z")

# Credentials come from the binding's auth provider; framing headers from the transport; the
# content type from ``media_type``. A profile may set none of them.
FORBIDDEN_PROFILE_HEADERS = frozenset(
    {
        "authorization", "proxy-authorization", "cookie", "set-cookie", "host", "content-type",
        "content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive", "te",
        "upgrade", "expect", "trailer", "x-api-key", "api-key", "x-auth-token",
    }
)

_BODY_MEDIA_TYPE = {
    "json_array": "application/json",
    "ndjson": "application/x-ndjson",
    "csv": "text/csv",
    "multipart_file": "multipart/form-data",
}
_PART_CONTENT_TYPE = {"csv": "text/csv", "ndjson": "application/x-ndjson", "json_array": "application/json"}

Compression = Literal["none", "gzip"]
PayloadFormat = Literal["csv", "ndjson", "json_array"]
TimestampPrecision = Literal["seconds", "milliseconds", "microseconds"]
# gzip bytes are a function of the level (and of the deflate implementation, pinned per payload).
GzipLevel = Annotated[StrictInt, Field(ge=1, le=9)]
DEFAULT_GZIP_LEVEL = 6


class CsvDialect(ContractModel):
    """Profile-owned CSV bytes (seed: "Deterministic CSV parameters"). RFC 4180 quoting: a field
    is quoted when it holds the delimiter, a quote, CR or LF; quotes are doubled."""

    encoding: Literal["utf-8"] = "utf-8"
    bom: StrictBool = False
    delimiter: Literal[",", ";", "\t", "|"] = ","
    quote: Literal['"'] = '"'
    escape: Literal["double_quote"] = "double_quote"
    line_terminator: Literal["crlf", "lf"] = "crlf"
    header: StrictBool = True
    # Null is written as this unquoted text; an empty string as ``""`` (quoted) or nothing.
    null_text: str = Field(default="", max_length=16)
    empty_string: Literal["quoted", "unquoted"] = "quoted"
    decimal_separator: Literal["."] = "."
    timestamp_precision: TimestampPrecision = "seconds"
    timestamp_zone: Literal["UTC"] = "UTC"
    boolean_text: Literal["true_false", "1_0"] = "true_false"

    @field_validator("null_text")
    @classmethod
    def _null_text(cls, value: str) -> str:
        if any(char in value for char in ',;\t|"\r\n') or not value.isprintable():
            raise contract_error("contract.invalid_value", "null_text may not hold a delimiter, quote or newline")
        return value

    @property
    def null_is_empty_string(self) -> bool:
        """Null and the empty string are the same bytes: a field keeping both is ambiguous."""
        return self.null_text == "" and self.empty_string == "unquoted"


class JsonFormat(ContractModel):
    """Profile-owned JSON bytes: fields in mapping order, no insignificant whitespace."""

    decimal: Literal["string", "number"] = "string"
    timestamp_precision: TimestampPrecision = "seconds"
    unicode: Literal["utf-8", "ascii_escaped"] = "utf-8"
    # ``omit`` leaves a null field out of the object; ``emit`` writes ``null``.
    null: Literal["emit", "omit"] = "emit"


def check_method(value: Any, *, allowed: tuple[str, ...]) -> Any:
    if isinstance(value, str) and value not in allowed:
        raise contract_error(
            "contract.unsupported_method",
            f"method must be one of {', '.join(allowed)} (upper case); DELETE and generic CRUD are not in V1",
        )
    return value


def check_header_name(name: str) -> str:
    if not _TOKEN.fullmatch(name):
        raise contract_error("contract.invalid_value", "header names must be RFC 9110 tokens")
    if name.lower() in FORBIDDEN_PROFILE_HEADERS:
        raise contract_error(
            "contract.forbidden_header", "credential, framing and content-type headers are not profile fields"
        )
    return name


class PayloadPart(ContractModel):
    name: str
    format: PayloadFormat
    compression: Compression = "none"
    content_type: str
    # Deterministic file name template; may carry the receiver fence (e.g. "{receiver_mutation_key}.csv.gz").
    filename: str
    gzip_level: GzipLevel = DEFAULT_GZIP_LEVEL
    csv_dialect: CsvDialect | None = None
    json_format: JsonFormat | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _PART_NAME.fullmatch(value):
            raise contract_error("contract.invalid_value", "part names are 1-64 of A-Z a-z 0-9 _ -")
        return value

    @field_validator("filename")
    @classmethod
    def _filename(cls, value: str) -> str:
        template_symbols(value, TemplateLocation.FILENAME)
        return value

    @model_validator(mode="after")
    def _content_type_matches(self) -> PayloadPart:
        expected = "application/gzip" if self.compression == "gzip" else _PART_CONTENT_TYPE[self.format]
        if self.content_type != expected:
            raise contract_error(
                "contract.media_type_mismatch",
                f"content_type must be {expected} for {self.format} with compression {self.compression}",
                field="content_type",
            )
        if self.csv_dialect is not None and self.format != "csv":
            raise contract_error("contract.invalid_value", "csv_dialect applies to a csv part", field="csv_dialect")
        if self.json_format is not None and self.format == "csv":
            raise contract_error("contract.invalid_value", "json_format applies to a JSON part", field="json_format")
        return self


class ScalarPart(ContractModel):
    """A bounded scalar form field: either a symbol (``value_from``) or a literal (``value``)."""

    value_from: str | None = None
    value: str | None = Field(default=None, max_length=128)
    format: Literal["date", "string"] = "string"

    @field_validator("value_from")
    @classmethod
    def _symbol(cls, value: str | None) -> str | None:
        if value is not None and value not in REQUEST_SYMBOLS:
            raise contract_error("contract.bad_symbol", "value_from must name a request symbol")
        return value

    @field_validator("value")
    @classmethod
    def _literal(cls, value: str | None) -> str | None:
        if value is not None and template_symbols(value, TemplateLocation.SCALAR):
            raise contract_error("contract.bad_symbol", "use value_from for symbols; value is a literal")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ScalarPart:
        if (self.value_from is None) == (self.value is None):
            raise contract_error("contract.invalid_value", "give exactly one of value_from or value")
        if self.format == "date" and self.value_from not in ("scope.from", "scope.to"):
            raise contract_error("contract.invalid_value", "format date needs value_from scope.from or scope.to")
        return self


class JsonArrayBody(ContractModel):
    type: Literal["json_array"]
    compression: Compression = "none"
    gzip_level: GzipLevel = DEFAULT_GZIP_LEVEL
    json_format: JsonFormat = Field(default_factory=JsonFormat)


class NdjsonBody(ContractModel):
    type: Literal["ndjson"]
    compression: Compression = "none"
    gzip_level: GzipLevel = DEFAULT_GZIP_LEVEL
    json_format: JsonFormat = Field(default_factory=JsonFormat)


class CsvBody(ContractModel):
    type: Literal["csv"]
    compression: Compression = "none"
    gzip_level: GzipLevel = DEFAULT_GZIP_LEVEL
    csv_dialect: CsvDialect = Field(default_factory=CsvDialect)


class MultipartFileBody(ContractModel):
    type: Literal["multipart_file"]
    payload_part: PayloadPart
    scalar_parts: dict[str, ScalarPart] = Field(default_factory=dict)

    @field_validator("scalar_parts")
    @classmethod
    def _scalar_parts(cls, value: dict[str, ScalarPart]) -> dict[str, ScalarPart]:
        if len(value) > MAX_SCALAR_PARTS:
            raise contract_error("contract.invalid_value", f"at most {MAX_SCALAR_PARTS} scalar parts")
        for name in value:
            if not _PART_NAME.fullmatch(name):
                raise contract_error("contract.invalid_value", "part names are 1-64 of A-Z a-z 0-9 _ -")
        return value

    @model_validator(mode="after")
    def _one_payload_part(self) -> MultipartFileBody:
        if self.payload_part.name in self.scalar_parts:
            raise contract_error(
                "contract.invalid_value", "a scalar part may not reuse the payload part name", field="scalar_parts"
            )
        return self


RequestBody = Annotated[JsonArrayBody | NdjsonBody | CsvBody | MultipartFileBody, Field(discriminator="type")]


HttpMethod = Literal["POST", "PUT", "PATCH"]


class RequestSpec(ContractModel):
    method: HttpMethod
    path: str
    query: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    media_type: str
    body: RequestBody

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> Any:
        return check_method(value, allowed=ALLOWED_METHODS)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        template_symbols(value, TemplateLocation.PATH)
        return value

    @field_validator("query")
    @classmethod
    def _query(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_QUERY:
            raise contract_error("contract.invalid_value", f"at most {MAX_QUERY} query parameters")
        for name, template in value.items():
            if not _QUERY_NAME.fullmatch(name):
                raise contract_error("contract.invalid_value", "query names are 1-64 of A-Z a-z 0-9 _ . -")
            template_symbols(template, TemplateLocation.QUERY)
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_HEADERS:
            raise contract_error("contract.invalid_value", f"at most {MAX_HEADERS} headers")
        seen: set[str] = set()
        for name, template in value.items():
            check_header_name(name)
            if name.lower() in seen:
                raise contract_error("contract.duplicate_key", "header names are case-insensitive; one is repeated")
            seen.add(name.lower())
            template_symbols(template, TemplateLocation.HEADER)
        return value

    @field_validator("body", mode="before")
    @classmethod
    def _body_type(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("type") not in BODY_TYPES:
            raise contract_error(
                "contract.unsupported_body",
                "body.type must be json_array, ndjson, csv or multipart_file (one payload part only)",
            )
        return value

    @field_validator("media_type")
    @classmethod
    def _media_type(cls, value: str) -> str:
        if not _MEDIA_TYPE.fullmatch(value):
            raise contract_error("contract.invalid_value", "media_type must be a lower-case type/subtype")
        return value

    @model_validator(mode="after")
    def _media_type_matches_body(self) -> RequestSpec:
        expected = _BODY_MEDIA_TYPE[self.body.type]
        if self.media_type != expected:
            raise contract_error(
                "contract.media_type_mismatch", f"media_type must be {expected} for a {self.body.type} body",
                field="media_type",
            )
        return self

    def header_value(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None
