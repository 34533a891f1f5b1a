"""Turn what the proxy and the receiver recorded into one row's history.

Delivery units come from the request bundle the harness exported (each child's scope and exact
wire digest), never from the sink. A proxy record is a mutation request when its method is POST
or PUT; its unit is found by the wire digest of its body, else by the scope in its query; the
fence key it carried is what the receiver recorded for the same body (the proxy sees header names
only). Receiver effects carry their own scope.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from certification.history import AppliedEffect, History, MutationRequest, SinkReport

MUTATING = frozenset({"POST", "PUT", "PATCH"})


def unit_name(scope_from: str, scope_to: str) -> str:
    return f"{scope_from}/{scope_to}"


def _unit_for(digest: str | None, by_digest: Mapping[str, str], by_receiver: Mapping[str, str]) -> str:
    """By the exact sealed bytes first, then by the scope the receiver parsed from the same bytes."""
    if digest is not None:
        unit = by_digest.get(digest) or by_receiver.get(digest)
        if unit is not None:
            return unit
    return f"unmatched:{digest}"


def _receiver_units(receiver_requests: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    units = {}
    for request in receiver_requests:
        digest, start, end = request.get("body_digest"), request.get("scope_start"), request.get("scope_end")
        if isinstance(digest, str) and start and end:
            units[digest] = unit_name(str(start), str(end))
    return units


def _started_at(entry: Mapping[str, Any]) -> float:
    stamps = entry.get("timestamps")
    if isinstance(stamps, dict):
        values = [v for v in stamps.values() if isinstance(v, int | float)]
        if values:
            return float(min(values))
    return 0.0


def _fence_keys(receiver_requests: Sequence[Mapping[str, Any]]) -> dict[str, list[str | None]]:
    keys: dict[str, list[str | None]] = defaultdict(list)
    for request in receiver_requests:
        digest = request.get("body_digest")
        if isinstance(digest, str):
            keys[digest].append(request.get("mutation_key") or request.get("idempotency_key"))
    return keys


def build_history(
    row_id: str, bundle: Mapping[str, Any], proxy_log: Sequence[Mapping[str, Any]], *,
    receiver_requests: Sequence[Mapping[str, Any]], receiver_effects: Sequence[Mapping[str, Any]],
    reports: Sequence[SinkReport], fenced_receiver: bool,
) -> History:
    expected = {unit_name(c["scope_from"], c["scope_to"]): int(c["rows"]) for c in bundle["children"]}
    by_digest = {str(c["wire_digest"]): unit_name(c["scope_from"], c["scope_to"]) for c in bundle["children"]}
    keys = _fence_keys(receiver_requests)
    by_receiver = _receiver_units(receiver_requests)
    seen: dict[str, int] = defaultdict(int)
    requests: list[MutationRequest] = []
    for entry in proxy_log:
        if str(entry.get("method", "")).upper() not in MUTATING:
            continue
        raw_digest = entry.get("request_body_sha256")
        digest = None if raw_digest is None else (raw_digest if str(raw_digest).startswith("sha256:")
                                                  else f"sha256:{raw_digest}")
        forwarded = entry.get("forwarded") in ("yes", "attempted", True)
        candidates = keys.get(digest or "", [])
        fence: str | None = None
        if forwarded and seen[digest or ""] < len(candidates):
            fence = candidates[seen[digest or ""]]
            seen[digest or ""] += 1
        elif candidates and len(set(candidates)) == 1:
            fence = candidates[0]  # a deterministic sink: the same body always carried this key
        requests.append(MutationRequest(
            seq=int(entry.get("seq", len(requests))), at=_started_at(entry),
            unit=_unit_for(digest, by_digest, by_receiver), fence_key=fence,
            bytes_from_sink=entry.get("phase") != "connect", forwarded=forwarded,
            response_delivered=entry.get("phase") == "delivered", fault=_fault_name(entry),
        ))
    effects = [
        AppliedEffect(
            seq=int(effect.get("effect_id", index)) if str(effect.get("effect_id", "")).isdigit() else index,
            at=float(index), unit=unit_name(str(effect.get("scope_start")), str(effect.get("scope_end"))),
            fence_key=effect.get("mutation_key") or effect.get("idempotency_key"),
            payload_digest=str(effect.get("payload_digest")), rows=int(effect.get("accepted_rows") or 0),
        )
        for index, effect in enumerate(receiver_effects)
    ]
    return History(row_id=row_id, expected_units=expected, requests=tuple(requests), effects=tuple(effects),
                   reports=tuple(reports), fenced_receiver=fenced_receiver)


def _fault_name(entry: Mapping[str, Any]) -> str | None:
    faults = entry.get("faults")
    if isinstance(faults, list) and faults:
        first = faults[0]
        if isinstance(first, dict):
            return f"{first.get('action')}@{first.get('phase')}"
    return None
