"""``GET /_admin/rows``: the rows the receiver currently holds, for a certifier's content check.

A certification must compare what was applied with what the dataset holds, value by value (a sink
that rewrites values but keeps row counts passes every count). The rows are the receiver's own data
in its documented canonical encoding (``mock-receiver.row.v1``), returned base64-encoded with the
row's date and the effect that wrote it; the certifier decodes them with its own reader. They are
served on the admin API only (with ``--admin-port``, never on the data port) and enter no log.
"""

from __future__ import annotations

import base64

from fastapi import APIRouter, Request

from mock_receiver.admin import After, Limit, Text, _filters, _page, _settle
from mock_receiver.admin_guard import AdminRoute
from mock_receiver.host_guard import ADMIN_PREFIX
from mock_receiver.intake import receiver_of
from mock_receiver.ledger import Txn

router = APIRouter(prefix=ADMIN_PREFIX, tags=["admin"], route_class=AdminRoute)


@router.get("/rows")
async def list_rows(request: Request, *, resource: Text = None, after_id: After = None,
                    limit: Limit = 1000) -> dict[str, object]:
    """Live rows in row order: ``{row_id, resource, row_date, effect_id, encoded}`` (base64)."""
    behaviour = receiver_of(request).behaviour  # one snapshot: a switch may replace it meanwhile
    filters = _filters(resource=resource)

    def work(txn: Txn) -> list[dict[str, object]]:
        _settle(behaviour, txn)
        return txn.select("rows", filters, order="row_id", after=after_id, limit=limit)

    items = await receiver_of(request).ledger.run(work)
    for item in items:
        encoded = item["encoded"]
        assert isinstance(encoded, bytes)  # the column is a BLOB
        item["encoded"] = base64.b64encode(encoded).decode("ascii")
    return _page(items, "row_id", limit)
