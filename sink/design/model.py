"""A schema-valid contract document viewed as a graph: tuple names, axes and transitions.

Both the validator rules and the query API read the document through this view, so the two
can never disagree about what a tuple name or a transition means.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sink.contracts.state import AXES

AXIS_NAMES: tuple[str, ...] = tuple(axis for axis, _ in AXES)
TERMINAL_ACKNOWLEDGEMENTS = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED", "PROTOCOL_UNKNOWN"})

# Acknowledgement only moves forward: an acceptance is never forgotten, a terminal one never changes.
ACKNOWLEDGEMENT_RANK = {
    "NOT_ACCEPTED": 0,
    "ACCEPTED": 1,
    "RUNNING": 2,
    **dict.fromkeys(TERMINAL_ACKNOWLEDGEMENTS, 3),
}

Axes = tuple[str, str, str, str, str]
# Positions of the axes inside an Axes tuple (the order of sink.contracts.state.AXES).
EXECUTION, EFFECT, ACKNOWLEDGEMENT, VERIFICATION, CHECKPOINT = range(5)


@dataclass(frozen=True, slots=True)
class Edge:
    index: int
    id: str
    source: str
    target: str
    kind: str
    preconditions: tuple[str, ...]
    advances: tuple[str, ...]
    error_codes: tuple[str, ...]

    @property
    def automatic(self) -> bool:
        return self.kind == "automatic"


def axes_of(entry: dict[str, Any]) -> Axes:
    values = tuple(str(entry[axis]) for axis in AXIS_NAMES)
    return (values[0], values[1], values[2], values[3], values[4])


class ContractGraph:
    """Name-indexed tuples (first occurrence wins) and the transition list of one document."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.tuples: dict[str, Axes] = {}
        for entry in document["legal_tuples"]:
            self.tuples.setdefault(entry["name"], axes_of(entry))
        self.edges: tuple[Edge, ...] = tuple(
            Edge(
                index=index,
                id=item["id"],
                source=item["from"],
                target=item["to"],
                kind=item["kind"],
                preconditions=tuple(item["cas_preconditions"]),
                advances=tuple(item["advances"]),
                error_codes=tuple(item.get("error_codes", ())),
            )
            for index, item in enumerate(document["transitions"])
        )
        self.terminal: frozenset[str] = frozenset(document["terminal_tuples"])
        self.initial: str = document["initial"]

    def known_edges(self) -> list[Edge]:
        """Transitions whose two endpoints are legal tuple names (others are reported elsewhere)."""
        return [edge for edge in self.edges if edge.source in self.tuples and edge.target in self.tuples]

    def reachable(self, starts: Iterable[str], edge_filter: Callable[[Edge], bool] = lambda _: True) -> set[str]:
        adjacency: dict[str, list[str]] = {}
        for edge in self.known_edges():
            if edge_filter(edge):
                adjacency.setdefault(edge.source, []).append(edge.target)
        seen = {start for start in starts if start in self.tuples}
        queue = deque(seen)
        while queue:
            for nxt in adjacency.get(queue.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def automatic_path_exists(self, start: str, target_predicate: Callable[[Axes], bool]) -> str | None:
        """First tuple satisfying ``target_predicate`` reachable from ``start`` by automatic steps only."""
        for name in sorted(self.reachable([start], lambda edge: edge.automatic) - {start}):
            if target_predicate(self.tuples[name]):
                return name
        return None
