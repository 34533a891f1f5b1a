"""``ChildRequests`` over the pinned plan and the sealed artifacts (the composition root's adapter).

Every request is rebuilt from immutable authority only: the payload manifest published at sealing
(method, rendered path and query, semantic headers, the exact wire framing) and the compiled plan's
profile (receipt and counter extractors, the poll path, the summary query). Nothing is re-rendered
from a workload manifest, so a recovering worker sends exactly the bytes the intent digest binds.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any

from sink.artifacts.documents import read_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.plan import CompiledPlan
from sink.contracts.transport import JsonScalar, PreparedRequest
from sink.journal.records import OperationRow, Receipt
from sink.payload.body import PAYLOAD_SCHEMA_ID, WireBody
from sink.payload.summary_digest import MOCK_RECEIVER_ROWS_V2, RowsSum, rows_digest
from sink.request_templates import RequestSymbols, render_poll_path, render_read_path
from sink.runtime.verification import ExpectedDelivery

if TYPE_CHECKING:
    # The frozen parent is read only when a payload has no sealed expected summary (see
    # ``_composed_v2``): a delivery process need not import the freeze, its transcoders and
    # normalizer for it (start-up cost).
    from sink.source.freeze import FrozenParent


def _pointers(plan: CompiledPlan) -> tuple[str, ...]:
    profile = plan.operation
    extractors = [*profile.acknowledgement.receipt.values(), *profile.result_policy.counters.values()]
    if profile.acknowledgement.poll is not None:
        extractors.append(profile.acknowledgement.poll.state)
    return tuple(sorted({e.body_json_pointer for e in extractors if e.body_json_pointer is not None}))


class ArtifactChildRequests:
    def __init__(self, plan: CompiledPlan, store: ImmutableArtifactPort) -> None:
        self._plan = plan
        self._store = store
        self._pointers = _pointers(plan)
        self._manifests: dict[str, dict[str, Any]] = {}
        self._parents: dict[str, FrozenParent] = {}

    def _manifest(self, operation: OperationRow) -> dict[str, Any]:
        ref = operation.descriptor.payload_ref
        if ref not in self._manifests:
            self._manifests[ref] = read_document(self._store, ref, PAYLOAD_SCHEMA_ID)
        return self._manifests[ref]

    def mutation_request(self, operation: OperationRow) -> PreparedRequest:
        manifest = self._manifest(operation)
        body = WireBody(self._store, manifest)
        request = manifest["request"]
        headers = [(str(name), str(value)) for name, value in request["headers"]]
        if body.content_encoding:
            headers.append(("Content-Encoding", body.content_encoding))
        return PreparedRequest(
            method=str(request["method"]), path_and_query=str(request["path_and_query"]),
            semantic_headers=tuple(headers), content_type=body.content_type, body=body,
            extract_pointers=self._pointers,
        )

    def poll_request(self, operation: OperationRow, receipt: Receipt) -> PreparedRequest | None:
        poll = self._plan.operation.acknowledgement.poll
        if poll is None:
            return None
        return PreparedRequest(
            method="GET", path_and_query=render_poll_path(poll, {"id": receipt.receipt_id}),
            semantic_headers=(), content_type=None, body=None, extract_pointers=self._pointers,
        )

    def _symbols(self, operation: OperationRow) -> RequestSymbols:
        manifest = self._manifest(operation)
        scope = manifest["scope"]
        return RequestSymbols(
            resource=self._plan.workload.resource, delivery_key=str(manifest["delivery_key"]),
            receiver_mutation_key=str(manifest["receiver_mutation_key"]),
            scope_from=date.fromisoformat(scope["from"]), scope_to=date.fromisoformat(scope["to"]),
        )

    def summary_request(self, operation: OperationRow) -> PreparedRequest | None:
        verification = self._plan.operation.verification
        if verification is None or verification.summary is None:
            return None
        summary = verification.summary
        symbols = self._symbols(operation)
        path_and_query = render_read_path(summary.path, summary.query, symbols)
        pointers = tuple(p for p in (summary.row_count.body_json_pointer, summary.content_digest.body_json_pointer)
                         if p is not None)
        return PreparedRequest(method="GET", path_and_query=path_and_query, semantic_headers=(), content_type=None,
                               body=None, extract_pointers=pointers)

    def expected(self, operation: OperationRow) -> ExpectedDelivery:
        manifest = self._manifest(operation)
        rows = int(manifest["rows"])
        verification = self._plan.operation.verification
        if verification is None or verification.summary is None:
            return ExpectedDelivery(rows=rows)
        scheme = verification.summary.digest_scheme
        sealed = manifest.get("expected_summary")
        if sealed is not None and sealed["scheme"] == scheme and int(sealed["rows"]) == rows:
            # Computed by the sealer from the very bytes this payload frames (sink/payload/expected_summary.py).
            return ExpectedDelivery(rows=rows, content_digest=str(sealed["content_digest"]))
        composed = self._composed_v2(manifest) if scheme == MOCK_RECEIVER_ROWS_V2 else None
        digest = composed or rows_digest(self._wire_rows(manifest), scheme)
        return ExpectedDelivery(rows=rows, content_digest=digest)

    def _composed_v2(self, manifest: Mapping[str, Any]) -> str | None:
        """The child's v2 digest as the sum of its days' sums, recorded when the parent was frozen
        from the very bytes the payload frames (the sealer verifies every day's digest as it reads
        them): no second pass over the payload. None where a day has no sum (a header-less CSV
        dialect, a parent frozen before sums were recorded): then the payload is decoded."""
        from sink.source.freeze import load_parent  # noqa: PLC0415 - see the TYPE_CHECKING block

        parent_ref = str(manifest["parent"])
        if parent_ref not in self._parents:
            self._parents[parent_ref] = load_parent(self._store, parent_ref)
        scope = manifest["scope"]
        days = self._parents[parent_ref].day_range(date.fromisoformat(scope["from"]), date.fromisoformat(scope["to"]))
        if not days or any(not day.rows_sum for day in days):
            return None
        total = sum((RowsSum(day.rows, int(day.rows_sum, 16)) for day in days), RowsSum())
        return total.digest() if total.count == int(manifest["rows"]) else None

    def _wire_rows(self, manifest: Mapping[str, Any]) -> Iterator[Mapping[str, JsonScalar]]:
        """The child's rows as the receiver reads them from the sealed payload (CSV values are
        text; JSON values keep their JSON type): decoded from the artifact, never from the source."""
        data = b"".join(self._store.open(str(manifest["payload"]["digest"])).chunks())
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8-sig")
        stripped = text.lstrip()
        if stripped.startswith("["):
            yield from json.loads(text)
        elif stripped.startswith("{"):
            yield from (json.loads(line) for line in text.splitlines() if line.strip())
        else:
            yield from csv.DictReader(io.StringIO(text, newline=""))
