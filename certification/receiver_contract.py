"""The mock receiver's wire contract, as the harness reads it from the behaviour file itself.

The judge attributes each request to what the *receiver* would do with it (docs/mock-receiver.md):
which endpoint it reaches, which days a ``partition_replace`` replaces (the request's range), which
fence value the receiver deduplicates on (a header, a query parameter, or the upload's file name, read
with the personality's key syntax: an RFC 8941 String unquoted, a UUID in lower case), and whether that
fence certifiably deduplicates at all. It reads the personality's behaviour YAML with its own loader
and shares no code with the receiver or the sink.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from certification.documents import DocumentError, load_yaml

SYNC_PATH = re.compile(r"^/mock/v1/resources/([A-Za-z0-9_.-]+)/batches\Z")
JOBS_PATH = "/mock/v1/dataset-jobs"
JOB_POLL_PATH = re.compile(r"^/mock/v1/dataset-jobs/[^/]+\Z")
SUMMARY_PATH = re.compile(r"^/mock/v1/resources/[A-Za-z0-9_.-]+/summary\Z")
DEDUPLICATING_SYNC_FENCES = frozenset({"idempotency_key", "fingerprint_ledger"})
_FILE_EXTENSIONS = (".gz",), (".csv", ".json", ".ndjson", ".jsonl")


class Endpoint(StrEnum):
    SYNC_SUBMIT = "sync_submit"
    ASYNC_SUBMIT = "async_submit"
    JOB_POLL = "job_poll"
    SUMMARY = "summary"
    OTHER = "other"


MUTATION_ENDPOINTS = frozenset({Endpoint.SYNC_SUBMIT, Endpoint.ASYNC_SUBMIT})


@dataclass(frozen=True, slots=True)
class Fence:
    type: str
    header: str | None
    """Lower-case header name (header fences)."""
    retention_seconds: float | None
    query_parameters: tuple[str, ...] = ()
    """The parameters a query fence is read from (any one; empty: the fence is a header)."""
    key_syntax: str = "token"
    """``token`` or ``printable`` (the value as sent), ``sf_string`` (quoted) or ``uuid``."""

    @property
    def deduplicates(self) -> bool:
        """A same-key repeat cannot apply twice: the receiver keeps the key and compares it."""
        return self.type in DEDUPLICATING_SYNC_FENCES or self.type == "filename_key"


@dataclass(frozen=True, slots=True)
class Resource:
    mutation: str
    date_field: str


@dataclass(frozen=True, slots=True)
class ReceiverContract:
    name: str
    resources: dict[str, Resource]
    sync_fence: Fence | None
    async_fence: Fence | None
    async_resource: str | None

    def endpoint(self, method: str, path: str) -> Endpoint:
        method = method.upper()
        if SYNC_PATH.fullmatch(path) and method in ("POST", "PUT"):
            return Endpoint.SYNC_SUBMIT
        if path == JOBS_PATH and method == "POST":
            return Endpoint.ASYNC_SUBMIT
        if JOB_POLL_PATH.fullmatch(path) and method in ("GET", "HEAD"):
            return Endpoint.JOB_POLL
        if SUMMARY_PATH.fullmatch(path) and method in ("GET", "HEAD"):
            return Endpoint.SUMMARY
        return Endpoint.OTHER

    def resource_of(self, endpoint: Endpoint, path: str) -> str | None:
        if endpoint is Endpoint.SYNC_SUBMIT:
            match = SYNC_PATH.fullmatch(path)
            return match.group(1) if match else None
        return self.async_resource if endpoint is Endpoint.ASYNC_SUBMIT else None

    def fence_for(self, endpoint: Endpoint) -> Fence | None:
        return self.sync_fence if endpoint is Endpoint.SYNC_SUBMIT else \
            self.async_fence if endpoint is Endpoint.ASYNC_SUBMIT else None


def filename_key(filename: str) -> str:
    """The receiver's duplicate key of an upload: the file name without ``.gz`` and the format suffix."""
    key = filename
    for suffixes in _FILE_EXTENSIONS:
        for suffix in suffixes:
            if key.endswith(suffix):
                key = key[: -len(suffix)]
                break
    return key


def _fence(section: Any) -> Fence | None:
    if not isinstance(section, dict):
        return None
    fence = section.get("fence")
    if not isinstance(fence, dict):
        return Fence("none", None, None)
    kind = str(fence.get("type", "none"))
    header = fence.get("header", "Idempotency-Key") if kind in DEDUPLICATING_SYNC_FENCES else None
    retention = fence.get("retention_seconds")
    parameters = fence.get("query_parameters") if fence.get("location") == "query" else None
    if parameters is not None and (not isinstance(parameters, list) or not parameters):
        raise DocumentError("a query fence names its query_parameters (a non-empty list)")
    return Fence(kind, None if header is None else str(header).lower(),
                 float(retention) if isinstance(retention, int | float) and not isinstance(retention, bool) else None,
                 query_parameters=tuple(str(name) for name in parameters or ()),
                 key_syntax=str(fence.get("key_syntax", "token")))


def read_contract(behaviour_path: Path) -> ReceiverContract:
    """Raises DocumentError for a file that is not a behaviour the harness can read."""
    document = load_yaml(behaviour_path)
    if not isinstance(document, dict) or not isinstance(document.get("resources"), dict):
        raise DocumentError(f"{behaviour_path}: not a receiver behaviour (no resources)")
    resources = {}
    for name, spec in document["resources"].items():
        if not isinstance(spec, dict) or not isinstance(spec.get("date_field"), str):
            raise DocumentError(f"{behaviour_path}: resource {name!r} has no date_field")
        resources[str(name)] = Resource(str(spec.get("mutation", "partition_replace")), spec["date_field"])
    sync = document.get("sync")
    sync_enabled = sync is None or (isinstance(sync, dict) and sync.get("enabled", True) is not False)
    jobs = document.get("async_jobs")
    jobs_enabled = isinstance(jobs, dict) and jobs.get("enabled", True) is not False
    async_resource = str(jobs["resource"]) if jobs_enabled and isinstance(jobs, dict) and "resource" in jobs else None
    return ReceiverContract(
        name=str(document.get("name", behaviour_path.stem)), resources=resources,
        sync_fence=_fence(sync if isinstance(sync, dict) else {}) if sync_enabled else None,
        async_fence=_fence(jobs) if jobs_enabled else None,
        async_resource=async_resource,
    )
