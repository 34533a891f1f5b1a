"""Rule validation, matching and firing decisions (pure, no proxy process)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from fault_proxy.rules import DuplicateRuleError, Match, RuleBook, RuleSpec

NAMES = frozenset({"content-type", "idempotency-key"})


def spec(**kwargs: Any) -> RuleSpec:
    kwargs.setdefault("fault", {"action": "close", "phase": "request"})
    return RuleSpec.model_validate(kwargs)


@pytest.mark.parametrize(
    ("match", "method", "path", "expected"),
    [
        ({}, "GET", "/x", True),
        ({"method": "post"}, "POST", "/x", True),
        ({"method": "POST"}, "GET", "/x", False),
        ({"path": "/batches/*"}, "POST", "/batches/1/items", True),  # fnmatch: * crosses "/"
        ({"path": "/batches/?"}, "POST", "/batches/12", False),
        ({"path": "/Batches/*"}, "POST", "/batches/1", False),  # case-sensitive
        ({"path_regex": r"/jobs/\d+"}, "GET", "/jobs/42", True),
        ({"path_regex": r"/jobs/\d+"}, "GET", "/jobs/42/status", False),  # whole-path match
        ({"headers_present": ["Idempotency-Key"]}, "POST", "/x", True),
        ({"headers_present": ["authorization"]}, "POST", "/x", False),
        ({"headers_absent": ["idempotency-key"]}, "POST", "/x", False),
        ({"headers_absent": ["authorization"]}, "POST", "/x", True),
    ],
)
def test_match(match: dict[str, Any], method: str, path: str, expected: bool) -> None:
    assert Match.model_validate(match).matches(method, path, NAMES) is expected


@pytest.mark.parametrize(
    "bad",
    [
        {"fault": {"action": "close", "phase": "forwarded"}},  # close cannot act at forwarded
        {"fault": {"action": "explode", "phase": "request"}},
        {"fault": {"action": "delay", "phase": "request", "seconds": 0}},
        {"fault": {"action": "status", "status": 99}},
        {"fault": {"action": "status", "status": 503, "headers": {"Retry-After": "1\r\nX: y"}}},
        {"fault": {"action": "status", "status": 503, "headers": {"Bad Name": "1"}}},
        {"fault": {"action": "kill", "phase": "request", "pid": 1}},
        {"fault": {"action": "truncate", "body_bytes": -1}},
        {"fault": {"action": "hold", "phase": "request", "on_timeout": "explode"}},
        {"fault": {"action": "close", "phase": "connect"}, "match": {"method": "GET"}},
        {"fire": "probability"},
        {"fire": "once", "probability": 0.5},
        {"nth": 0},
        {"match": {"path": "/a", "path_regex": "/a"}},
        {"match": {"path_regex": "("}},
        {"match": {"headers_present": ["bad header"]}},
        {"id": "has space"},
        {"unknown_field": 1},
        # Numbers are strict: a string or a boolean is not a number, whatever it spells.
        {"nth": "3"},
        {"nth": True},
        {"nth": 3.0},
        {"fire": "probability", "probability": "0.5"},
        {"fire": "probability", "probability": True},
        {"fault": {"action": "status", "status": "503"}},
        {"fault": {"action": "status", "status": True}},
        {"fault": {"action": "delay", "phase": "request", "seconds": "1"}},
        {"fault": {"action": "delay", "phase": "request", "seconds": True}},
        {"fault": {"action": "hold", "phase": "request", "timeout_seconds": "5"}},
        {"fault": {"action": "kill", "phase": "request", "pid": "1234"}},
        {"fault": {"action": "truncate", "body_bytes": "10"}},
        # A 204/304 answer has no body, and the proxy frames what it sends itself.
        {"fault": {"action": "status", "status": 204, "body": "x"}},
        {"fault": {"action": "status", "status": 304, "body": "{}"}},
        {"fault": {"action": "status", "status": 200, "headers": {"Content-Length": "99"}}},
        {"fault": {"action": "status", "status": 200, "headers": {"transfer-encoding": "chunked"}}},
    ],
)
def test_invalid_specs_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**bad)


@pytest.mark.parametrize(
    "good",
    [
        {"nth": 3},
        {"fire": "probability", "probability": 1},  # a JSON integer is a number for a float field
        {"fault": {"action": "delay", "phase": "request", "seconds": 2}},
        {"fault": {"action": "hold", "phase": "request", "timeout_seconds": 0.5}},
        {"fault": {"action": "status", "status": 204}},
        {"fault": {"action": "status", "status": 304, "body": ""}},  # an empty body is no body
        {"fault": {"action": "status", "status": 205, "body": "x"}},
        {"fault": {"action": "status", "status": 503, "headers": {"Content-Type": "text/plain", "Retry-After": "1"}}},
    ],
)
def test_valid_specs_are_accepted(good: dict[str, Any]) -> None:
    assert spec(**good).model_dump(exclude_none=True)["fault"]["action"] in {"close", "delay", "hold", "status"}


def test_nth_once_fires_exactly_on_the_nth_match() -> None:
    book = RuleBook(seed=1)
    book.add(spec(match={"method": "POST"}, nth=3, fire="once"))
    decisions = [bool(book.decide_request("POST", "/x", NAMES)) for _ in range(6)]
    assert decisions == [False, False, True, False, False, False]
    # Non-matching requests do not advance the counter.
    assert book.decide_request("GET", "/x", NAMES) == []
    assert book.rules[0].matched == 6 and book.rules[0].fired == 1


def test_nth_always_fires_from_the_nth_on() -> None:
    book = RuleBook(seed=1)
    book.add(spec(nth=2, fire="always"))
    assert [bool(book.decide_request("POST", "/x", NAMES)) for _ in range(4)] == [False, True, True, True]


def _decisions(seed: int, n: int = 64, rule_id: str = "p") -> list[bool]:
    book = RuleBook(seed=seed)
    book.add(spec(id=rule_id, fire="probability", probability=0.5))
    return [bool(book.decide_request("POST", "/x", NAMES)) for _ in range(n)]


def test_probability_is_reproducible_from_the_seed() -> None:
    first = _decisions(11)
    assert first == _decisions(11)
    assert 10 < sum(first) < 54  # really a coin, not constant
    assert first != _decisions(12)
    assert first != _decisions(11, rule_id="q")  # each rule has its own stream


def test_probability_stream_is_independent_of_other_rules() -> None:
    alone = _decisions(5, n=20)
    book = RuleBook(seed=5)
    book.add(spec(id="other", match={"method": "GET"}, fire="probability", probability=0.5))
    book.add(spec(id="p", match={"method": "POST"}, fire="probability", probability=0.5))
    mixed = []
    for _ in range(20):
        book.decide_request("GET", "/x", NAMES)
        mixed.append(any(f.rule_id == "p" for f in book.decide_request("POST", "/x", NAMES)))
    assert mixed == alone


def test_probability_extremes() -> None:
    book = RuleBook(seed=3)
    book.add(spec(id="never", fire="probability", probability=0.0))
    book.add(spec(id="always", fire="probability", probability=1.0))
    fired = [f.rule_id for _ in range(50) for f in book.decide_request("GET", "/", NAMES)]
    assert fired == ["always"] * 50


def test_connect_rules_count_connections_not_requests() -> None:
    book = RuleBook(seed=0)
    book.add(spec(nth=2, fire="once", fault={"action": "close", "phase": "connect"}))
    assert book.decide_request("GET", "/", NAMES) == []
    assert book.decide_connection() == []
    assert [f.fault.phase for f in book.decide_connection()] == ["connect"]
    assert book.decide_connection() == []


def test_ids_are_assigned_and_duplicates_refused() -> None:
    book = RuleBook(seed=0)
    assert book.add(spec()).id == "r1"
    book.add(spec(id="r2"))
    assert book.add(spec()).id == "r3"  # skips the taken id
    with pytest.raises(DuplicateRuleError):
        book.add(spec(id="r2"))
    assert book.delete("r2") and not book.delete("r2")
    book.clear(seed=9)
    assert book.rules == [] and book.seed == 9 and book.add(spec()).id == "r1"
