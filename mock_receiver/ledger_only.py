"""``storage: ledger_only``: a receiver that keeps its ledger (requests, effects, fences) but not
the rows, for benchmarks where storing every row would make the receiver what limits everyone.

Each effect still records its accepted row count and the digests of its rows (the sorted
``mock-receiver.rows.v1`` and the summable ``mock-receiver.rows.v2`` state), so the read-only
summary of a scope is answered from the one live effect that covers exactly that scope (the
latest effect of that scope under partition replace). A scope that several effects, or part of
one, would make up has no v1 digest to compose: that summary is refused (422
``summary_needs_rows``), never guessed.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from mock_receiver.canonical import MultisetSum, summary_digests
from mock_receiver.engine import Scope
from mock_receiver.ledger import Txn
from mock_receiver.problems import ProblemError


def summary(txn: Txn, resource: str, scope: Scope) -> Response:
    overlapping = txn.conn.execute(
        "SELECT scope_start, scope_end, accepted_rows, content_digest, mutation, content_sum FROM effects "
        "WHERE resource = ? AND scope_start < ? AND scope_end > ? ORDER BY effect_id",
        (resource, scope.end or "9999-12-31", scope.start or "0000-01-01")).fetchall()
    live: dict[tuple[str, str], tuple[int, str, str]] = {}
    for start, end, rows, digest, mutation, content_sum in overlapping:
        live[(start, end)] = (rows, digest, content_sum) \
            if mutation == "partition_replace" or (start, end) not in live \
            else (-1, "", "")  # two appends to one scope: their rows are not one v1 digest
    body: dict[str, object] = {"resource": resource, "range_start": scope.start, "range_end": scope.end}
    if not live:
        return JSONResponse({**body, **summary_digests([])})
    only = live.get((scope.start or "", scope.end or ""))
    if len(live) == 1 and only is not None and only[0] >= 0 and only[2]:
        return JSONResponse({**body, "row_count": only[0], "content_digest": only[1],
                             "content_digest_v2": MultisetSum.from_state(only[2]).digest()})
    return ProblemError(422, "summary_needs_rows", "Unprocessable content",
                        "this receiver keeps only its ledger: it can summarise one applied scope exactly").response()
