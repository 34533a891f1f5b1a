"""From proxy and receiver records to a history: units by exact sealed bytes, fence keys from what
the receiver recorded, and the naive baseline's resend after a commit-then-cut caught."""

from __future__ import annotations

from certification.checkers import check
from certification.history import SinkReport
from certification.observe import build_history

BUNDLE = {"children": [
    {"scope_from": "2026-03-01", "scope_to": "2026-03-03", "rows": 5, "wire_digest": "sha256:aa"},
    {"scope_from": "2026-03-03", "scope_to": "2026-03-05", "rows": 3, "wire_digest": "sha256:bb"},
]}


def proxy(seq: int, digest: str, phase: str, forwarded: str = "yes") -> dict[str, object]:
    return {"seq": seq, "method": "POST", "path": "/x", "phase": phase, "forwarded": forwarded,
            "request_body_sha256": digest, "timestamps": {"request_headers": float(seq)}}


def received(digest: str, key: str | None, start: str, end: str) -> dict[str, object]:
    return {"body_digest": digest, "mutation_key": key, "scope_start": start, "scope_end": end}


def effect(start: str, end: str, rows: int, key: str | None, payload: str) -> dict[str, object]:
    return {"scope_start": start, "scope_end": end, "accepted_rows": rows, "mutation_key": key,
            "payload_digest": payload}


def test_a_fenced_replay_of_the_same_bytes_is_one_effect_and_no_unproved_resend() -> None:
    history = build_history(
        "r", BUNDLE, [proxy(1, "aa", "response"), proxy(2, "aa", "delivered"), proxy(3, "bb", "delivered")],
        receiver_requests=[received("sha256:aa", "k1", "2026-03-01", "2026-03-03"),
                           received("sha256:aa", "k1", "2026-03-01", "2026-03-03"),
                           received("sha256:bb", "k2", "2026-03-03", "2026-03-05")],
        receiver_effects=[effect("2026-03-01", "2026-03-03", 5, "k1", "p1"),
                          effect("2026-03-03", "2026-03-05", 3, "k2", "p2")],
        reports=[SinkReport(0)], fenced_receiver=True,
    )
    assert {r.unit for r in history.requests} == {"2026-03-01/2026-03-03", "2026-03-03/2026-03-05"}
    assert [r.fence_key for r in history.requests] == ["k1", "k1", "k2"]
    assert check(history).safe


def test_a_keyless_resend_with_other_bytes_is_matched_through_the_receiver_and_caught() -> None:
    history = build_history(
        "r", BUNDLE, [proxy(1, "aa", "response"), proxy(2, "cc", "delivered"), proxy(3, "bb", "delivered")],
        receiver_requests=[received("sha256:aa", None, "2026-03-01", "2026-03-03"),
                           received("sha256:cc", None, "2026-03-01", "2026-03-03"),
                           received("sha256:bb", None, "2026-03-03", "2026-03-05")],
        receiver_effects=[effect("2026-03-01", "2026-03-03", 5, None, "p1"),
                          effect("2026-03-01", "2026-03-03", 5, None, "p1b"),
                          effect("2026-03-03", "2026-03-05", 3, None, "p2")],
        reports=[SinkReport(0)], fenced_receiver=True,
    )
    counters = check(history)
    assert counters.duplicates == 1
    assert counters.unproved_resends == 1


def test_a_request_cut_at_connect_is_not_bytes_from_the_sink() -> None:
    history = build_history("r", BUNDLE, [proxy(1, "aa", "connect", forwarded="no")], receiver_requests=[],
                            receiver_effects=[], reports=[SinkReport(4)], fenced_receiver=False)
    assert history.requests[0].bytes_from_sink is False
    assert history.requests[0].forwarded is False
