"""Kill tests for fault_proxy/rules.py (mutation gate, tools/mutation): every documented bound of
a rule is accepted exactly at its edge and refused one step beyond it, defaults are the
documented ones, and the rule book's limit and counters hold."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from fault_proxy.rules import Match, RuleBook, RuleLimitError, RuleSpec


def _ok(fault: dict[str, Any] | None = None, **fields: Any) -> bool:
    try:
        RuleSpec.model_validate({"fault": fault or {"action": "close", "phase": "request"}, **fields})
    except ValidationError:
        return False
    return True


def _match_ok(**match: Any) -> bool:
    return _ok(match=match)


# (edge accepted, one step beyond refused) for every bounded field.
BOUNDS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("truncate_low", {"fault": {"action": "truncate", "body_bytes": 0}},
     {"fault": {"action": "truncate", "body_bytes": -1}}),
    ("truncate_high", {"fault": {"action": "truncate", "body_bytes": 1 << 30}},
     {"fault": {"action": "truncate", "body_bytes": (1 << 30) + 1}}),
    ("delay_low", {"fault": {"action": "delay", "phase": "request", "seconds": 0.001}},
     {"fault": {"action": "delay", "phase": "request", "seconds": 0}}),
    ("delay_high", {"fault": {"action": "delay", "phase": "request", "seconds": 600}},
     {"fault": {"action": "delay", "phase": "request", "seconds": 600.001}}),
    ("status_low", {"fault": {"action": "status", "status": 200}}, {"fault": {"action": "status", "status": 199}}),
    ("status_high", {"fault": {"action": "status", "status": 599}}, {"fault": {"action": "status", "status": 600}}),
    ("status_body", {"fault": {"action": "status", "status": 503, "body": "b" * 65536}},
     {"fault": {"action": "status", "status": 503, "body": "b" * 65537}}),
    ("status_header_value", {"fault": {"action": "status", "status": 503, "headers": {"X-A": "v" * 4096}}},
     {"fault": {"action": "status", "status": 503, "headers": {"X-A": "v" * 4097}}}),
    ("status_header_name", {"fault": {"action": "status", "status": 503, "headers": {"x" * 128: "v"}}},
     {"fault": {"action": "status", "status": 503, "headers": {"x" * 129: "v"}}}),
    ("status_header_name_empty", {"fault": {"action": "status", "status": 503, "headers": {"x": "v"}}},
     {"fault": {"action": "status", "status": 503, "headers": {"": "v"}}}),
    ("status_header_count",
     {"fault": {"action": "status", "status": 503, "headers": {f"h{i}": "v" for i in range(32)}}},
     {"fault": {"action": "status", "status": 503, "headers": {f"h{i}": "v" for i in range(33)}}}),
    ("hold_low", {"fault": {"action": "hold", "phase": "request", "timeout_seconds": 0.001}},
     {"fault": {"action": "hold", "phase": "request", "timeout_seconds": 0}}),
    ("hold_high", {"fault": {"action": "hold", "phase": "request", "timeout_seconds": 3600}},
     {"fault": {"action": "hold", "phase": "request", "timeout_seconds": 3600.001}}),
    ("kill_low", {"fault": {"action": "kill", "phase": "request", "pid": 2}},
     {"fault": {"action": "kill", "phase": "request", "pid": 1}}),
    ("kill_high", {"fault": {"action": "kill", "phase": "request", "pid": 4_194_304}},
     {"fault": {"action": "kill", "phase": "request", "pid": 4_194_305}}),
    ("nth", {"nth": 1}, {"nth": 0}),
    ("probability_low", {"fire": "probability", "probability": 0.0}, {"fire": "probability", "probability": -0.001}),
    ("probability_high", {"fire": "probability", "probability": 1.0}, {"fire": "probability", "probability": 1.001}),
    ("method", {"match": {"method": "M" * 32}}, {"match": {"method": "M" * 33}}),
    ("path", {"match": {"path": "/" + "p" * 1023}}, {"match": {"path": "/" + "p" * 1024}}),
    ("path_regex", {"match": {"path_regex": "/" + "p" * 1023}}, {"match": {"path_regex": "/" + "p" * 1024}}),
    ("headers_present_count", {"match": {"headers_present": [f"h{i}" for i in range(32)]}},
     {"match": {"headers_present": [f"h{i}" for i in range(33)]}}),
    ("headers_absent_count", {"match": {"headers_absent": [f"h{i}" for i in range(32)]}},
     {"match": {"headers_absent": [f"h{i}" for i in range(33)]}}),
    ("headers_present_name", {"match": {"headers_present": ["x" * 128]}}, {"match": {"headers_present": ["x" * 129]}}),
    ("headers_absent_name", {"match": {"headers_absent": ["x" * 128]}}, {"match": {"headers_absent": ["x" * 129]}}),
    ("headers_present_empty", {"match": {"headers_present": ["x"]}}, {"match": {"headers_present": [""]}}),
    ("rule_id", {"id": "r" * 64}, {"id": "r" * 65}),
]


@pytest.mark.parametrize(("edge", "beyond"), [(a, b) for _, a, b in BOUNDS], ids=[n for n, _, _ in BOUNDS])
def test_each_bound_holds_exactly_at_its_edge(edge: dict[str, Any], beyond: dict[str, Any]) -> None:
    assert _ok(**edge) is True
    assert _ok(**beyond) is False


def test_documented_defaults() -> None:
    hold = RuleSpec.model_validate({"fault": {"action": "hold", "phase": "request"}}).fault
    assert hold.model_dump() == {"action": "hold", "phase": "request", "timeout_seconds": 60.0, "on_timeout": "cut"}
    truncate = RuleSpec.model_validate({"fault": {"action": "truncate", "body_bytes": 5}}).fault
    assert truncate.model_dump() == {"action": "truncate", "phase": "response", "body_bytes": 5}
    status = RuleSpec.model_validate({"fault": {"action": "status", "status": 503}}).fault
    assert status.model_dump() == {"action": "status", "phase": "request", "status": 503, "headers": {}, "body": None}
    rule = RuleSpec.model_validate({"fault": {"action": "close", "phase": "request"}})
    assert (rule.id, rule.nth, rule.fire, rule.probability, rule.match.is_empty) == (None, None, "always", None, True)


def test_unknown_fields_are_refused_everywhere() -> None:
    assert _ok(extra=1) is False
    assert _ok(match={"method": "GET", "extra": 1}) is False
    assert _ok(fault={"action": "close", "phase": "request", "extra": 1}) is False


@pytest.mark.parametrize("field", [{"method": "GET"}, {"path": "/x"}, {"path_regex": "/x"},
                                   {"headers_present": ["a"]}, {"headers_absent": ["a"]}])
def test_any_single_criterion_makes_a_match_non_empty(field: dict[str, Any]) -> None:
    assert Match.model_validate(field).is_empty is False
    assert _ok(match=field, fault={"action": "close", "phase": "connect"}) is False


def test_the_rule_book_holds_at_most_1000_rules() -> None:
    book = RuleBook(seed=1)
    for _ in range(1000):
        book.add(RuleSpec.model_validate({"fault": {"action": "close", "phase": "request"}}))
    with pytest.raises(RuleLimitError):
        book.add(RuleSpec.model_validate({"fault": {"action": "close", "phase": "request"}}))


def test_rule_json_carries_its_counters() -> None:
    book = RuleBook(seed=1)
    once = {"id": "a", "fire": "once", "fault": {"action": "close", "phase": "request"}}
    rule = book.add(RuleSpec.model_validate(once))
    assert len(book.decide_request("GET", "/", frozenset())) == 1
    assert book.decide_request("GET", "/", frozenset()) == []
    body = rule.to_json()
    assert (body["id"], body["matched"], body["fired"], body["armed"]) == ("a", 2, 1, False)


def _close(**fields: Any) -> RuleSpec:
    return RuleSpec.model_validate({"fault": {"action": "close", "phase": "request"}, **fields})


def test_rules_are_immutable_once_validated() -> None:
    rule = _close()
    with pytest.raises(ValidationError):
        rule.fire = "once"  # type: ignore[misc]


def test_a_match_copied_without_validation_still_matches_its_regex() -> None:
    unvalidated = Match.model_construct(path_regex=r"/jobs/\d+")
    assert unvalidated.matches("GET", "/jobs/7", frozenset()) is True
    assert unvalidated.matches("GET", "/jobs/x", frozenset()) is False


@pytest.mark.parametrize("match", [{"method": "GE T"}, {"headers_absent": ["bad name"]}])
def test_methods_and_absent_header_names_must_be_tokens(match: dict[str, Any]) -> None:
    assert _match_ok(**match) is False


def test_only_cr_lf_and_nul_are_refused_in_a_status_header_value() -> None:
    assert _ok({"action": "status", "status": 503, "headers": {"X-A": "XYZ value"}}) is True
    for bad in ("a\rb", "a\nb", "a\x00b"):
        assert _ok({"action": "status", "status": 503, "headers": {"X-A": bad}}) is False


def test_rule_json_is_plain_json() -> None:
    body = RuleBook(seed=1).add(_close(match={"headers_present": ["a"]})).to_json()
    assert body["match"] == {"method": None, "path": None, "path_regex": None, "headers_present": ["a"],
                             "headers_absent": []}


def test_assigned_ids_count_up_and_are_never_reused() -> None:
    book = RuleBook(seed=1)
    assert [book.add(_close()).id for _ in range(3)] == ["r1", "r2", "r3"]
    assert book.delete("r3") is True
    assert book.add(_close()).id == "r4"


class _FixedDraw:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_a_probability_rule_fires_only_below_its_probability_and_never_stops_later_rules() -> None:
    book = RuleBook(seed=1)
    chance = book.add(_close(fire="probability", probability=0.5))
    always = book.add(_close())
    chance.rng = _FixedDraw(0.5)  # type: ignore[assignment]
    assert [f.rule_id for f in book.decide_request("GET", "/", frozenset())] == [always.id]
    chance.rng = _FixedDraw(0.4999)  # type: ignore[assignment]
    assert [f.rule_id for f in book.decide_request("GET", "/", frozenset())] == [chance.id, always.id]


def test_a_disarmed_or_not_yet_eligible_rule_never_stops_later_rules() -> None:
    book = RuleBook(seed=1)
    once = book.add(_close(fire="once"))
    later = book.add(_close(nth=5))
    always = book.add(_close())
    assert [f.rule_id for f in book.decide_request("GET", "/", frozenset())] == [once.id, always.id]
    assert [f.rule_id for f in book.decide_request("GET", "/", frozenset())] == [always.id]
    assert later.fired == 0
