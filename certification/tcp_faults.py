"""Byte-level faults from the TCP fault proxy between the wire tap and the HTTP fault proxy.

A toxic is a connection-level fault: it acts on every connection while it is installed. A one-shot
row (``once``, the default) removes it as soon as the sink has left the first connection that carried a
mutation request (its answer came, or it gave up), so the toxic acts on that request and the sink's
retry meets a clean wire. It counts as
fired when that happened; with ``once: false`` it stays for the whole first run and counts as fired
when the first run opened a connection through it. Which side of the receiver's commit it acted on is
in the history: whether the proxy forwarded the request, and the receiver's effects.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from certification.faults import FaultContext, RowFault
from certification.history import FaultEvidence
from certification.sinks import Finished, Launched
from certification.wire_reader import read_request

TOXIC_NAME = "row-toxic"


class TcpToxicFault(RowFault):
    kind = "tcp_toxic"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        assert ctx.tcp is not None, "a tcp_toxic row needs the TCP proxy in the chain"
        ctx.tcp.add_toxic({"toxicity": 1.0, **(self.spec.toxic or {}), "name": TOXIC_NAME})
        self.fired = False
        self.removed = False

    def _acted(self, ctx: FaultContext) -> bool:
        assert ctx.tap is not None and ctx.row.contract is not None
        for connection in ctx.tap.connections():
            if self.spec.once and connection.client_left_at is None and connection.closed_at is None:
                continue
            if not self.spec.once and connection.framer.requests:
                return True
            if any(read_request(raw, ctx.row.contract).mutation for raw in connection.framer.requests):
                return True
        return False

    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        def watch() -> None:
            while not first.exited() and not self.fired:
                self.fired = self._acted(ctx)
                if self.fired and self.spec.once:
                    self._remove(ctx)
                time.sleep(0.01)

        self.thread = threading.Thread(target=watch, daemon=True)
        self.thread.start()

    def _remove(self, ctx: FaultContext) -> None:
        if ctx.tcp is not None and not self.removed:
            self.removed = ctx.tcp.remove_toxic(TOXIC_NAME) or self.removed

    def before_first_reap(self, ctx: FaultContext) -> None:
        if hasattr(self, "thread"):
            self.thread.join(timeout=10)
        if ctx.tap is not None and not getattr(self, "fired", False):
            # The sink has exited, but the tap may not have read its closes yet: a one-shot toxic
            # counts only connections the client left, and would otherwise miss the one it acted on.
            ctx.tap.until_clients_left()
        self.fired = getattr(self, "fired", False) or self._acted(ctx)
        self._remove(ctx)

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        toxic = self.spec.toxic or {}
        what = f"{toxic.get('type')} on {toxic.get('stream', 'downstream')}"
        fired = getattr(self, "fired", False)
        return FaultEvidence(self.kind, fired, f"{what} acted on a connection carrying a mutation request" if fired
                             else f"{what}: no connection of the first run carried a mutation request")
