"""Each input of each digest matters, alone, and only where it should (issue 14).

For every leaf input of the identity graph (id_graph.DIRECT, written from the seed's identity
section) changing that input alone must change exactly the digests that depend on it, directly or
through a derived digest, and leave every other digest unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
from id_graph import BASE, CHANGED, DIRECT, FEEDS, compute, dependents

from sink import identity as ident


def test_the_graph_covers_every_input_once() -> None:
    assert set(BASE) == set(CHANGED) == set(DIRECT)
    assert all(BASE[name] != CHANGED[name] for name in BASE)
    every_digest = set(compute(BASE))
    assert set().union(*DIRECT.values(), *FEEDS.values()) | set(FEEDS) == every_digest


@pytest.mark.parametrize("leaf", sorted(DIRECT))
def test_changing_one_input_changes_exactly_its_dependent_digests(leaf: str) -> None:
    before = compute(BASE)
    after = compute({**BASE, leaf: CHANGED[leaf]})
    moved = {name for name in before if before[name] != after[name]}
    assert moved == dependents(leaf)


def test_all_digests_are_distinct() -> None:
    digests = list(compute(BASE).values())
    assert len(set(digests)) == len(digests)
    assert all(ident.is_digest(d) for d in digests)


# Seed: "Semantic headers exclude ephemeral authorization, tracing, date, and transport-generated
# fields". Written out here so that dropping any one of them from the code fails a test.
EPHEMERAL_HEADERS = (
    "authorization", "proxy-authorization", "cookie", "set-cookie", "date", "traceparent", "tracestate",
    "baggage", "x-request-id", "x-correlation-id", "x-amzn-trace-id", "x-b3-traceid", "x-b3-spanid",
    "x-b3-parentspanid", "x-b3-sampled", "b3", "content-length", "transfer-encoding", "connection",
    "keep-alive", "host", "user-agent", "accept-encoding", "expect", "te",
)


@pytest.mark.parametrize("name", EPHEMERAL_HEADERS)
def test_ephemeral_header_never_enters_the_rendered_request(name: str) -> None:
    base = compute(BASE)["rendered_request"]
    for spelling in (name, name.upper(), f" {name.title()} "):
        headers = {**BASE["semantic_headers"], spelling: "sentinel-ephemeral-value"}
        assert compute({**BASE, "semantic_headers": headers})["rendered_request"] == base
        assert spelling not in ident.semantic_headers(headers)


def test_an_ephemeral_header_does_not_hide_the_headers_after_it() -> None:
    assert ident.semantic_headers({"Authorization": "sentinel", "Date": "d", "Content-Type": "text/csv"}) == {
        "content-type": "text/csv"}


def test_both_parts_of_the_generation_feed_the_delivery_key() -> None:
    base = compute(BASE)["delivery_key"]
    for generation in (ident.Generation("2026-08-31T00:00:00Z", 0), ident.Generation("2026-08-30T00:00:00Z", 1)):
        assert compute({**BASE, "generation": generation})["delivery_key"] != base


def test_semantic_headers_are_case_folded_and_kept() -> None:
    assert ident.semantic_headers({" Content-Type ": "text/csv", "X-Mode": "a"}) == {
        "content-type": "text/csv", "x-mode": "a"}
    with pytest.raises(ValueError, match="duplicate header"):
        ident.semantic_headers({"X-Mode": "a", "x-mode": "b"})


def test_method_is_case_insensitive_in_the_rendered_request() -> None:
    assert compute({**BASE, "method": "post"})["rendered_request"] == compute(BASE)["rendered_request"]


@pytest.mark.parametrize(("authority", "canonical"), [
    ("https://Receiver.Example.TEST:443", "https://receiver.example.test"),
    ("http://receiver.example.test:80", "http://receiver.example.test"),
    ("http://receiver.example.test:443", "http://receiver.example.test:443"),
    ("https://receiver.example.test:80", "https://receiver.example.test:80"),
    ("HTTPS://receiver.example.test:8443/", "https://receiver.example.test:8443"),
    ("https://[::1]:9443", "https://[::1]:9443"),
    ("https://[::1]", "https://[::1]"),
])
def test_origin_canonical_form(authority: str, canonical: str) -> None:
    assert ident.canonical_origin(authority) == canonical
    binding = compute({**BASE, "authority_origin": authority})["receiver_binding"]
    assert binding == compute({**BASE, "authority_origin": canonical})["receiver_binding"]


@pytest.mark.parametrize("bad", [
    "https://user@receiver.example.test", "https://:secret@receiver.example.test",
    "https://receiver.example.test/v1", "https://receiver.example.test?q=1", "https://receiver.example.test#f",
    "ftp://receiver.example.test", "https://", "receiver.example.test",
])
def test_origin_refuses_anything_but_a_bare_http_origin(bad: str) -> None:
    with pytest.raises(ValueError, match="authority must be"):
        ident.canonical_origin(bad)


@pytest.mark.parametrize("field", [
    "frozen_parent_digest", "compiled_plan_digest", "sealed_payload_digest",
])
def test_digest_typed_leaf_inputs_are_refused_when_not_digests(field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be a sha256"):
        compute({**BASE, field: "not-a-digest"})


_DERIVED_DIGEST_ARGS: list[tuple[Any, str, dict[str, str]]] = [
    (ident.receiver_mutation_key, "operation_namespace", {"delivery_key": BASE["sealed_payload_digest"]}),
    (ident.receiver_mutation_key, "delivery_key", {"operation_namespace": BASE["sealed_payload_digest"]}),
    (ident.mutation_intent_digest, "receiver_binding_semantics_digest",
     {"operation_semantics_digest": BASE["sealed_payload_digest"],
      "rendered_request_semantics_digest": BASE["sealed_payload_digest"]}),
    (ident.mutation_intent_digest, "operation_semantics_digest",
     {"receiver_binding_semantics_digest": BASE["sealed_payload_digest"],
      "rendered_request_semantics_digest": BASE["sealed_payload_digest"]}),
    (ident.mutation_intent_digest, "rendered_request_semantics_digest",
     {"receiver_binding_semantics_digest": BASE["sealed_payload_digest"],
      "operation_semantics_digest": BASE["sealed_payload_digest"]}),
    (ident.profile_contract_digest, "operation_semantics_digest",
     {"execution_policy_digest": BASE["sealed_payload_digest"], "profile_schema_id": "p", "profile_version": 1}),
    (ident.profile_contract_digest, "execution_policy_digest",
     {"operation_semantics_digest": BASE["sealed_payload_digest"], "profile_schema_id": "p", "profile_version": 1}),
]


@pytest.mark.parametrize(("function", "field", "others"), _DERIVED_DIGEST_ARGS,
                         ids=[f"{f.__name__}.{name}" for f, name, _ in _DERIVED_DIGEST_ARGS])
def test_derived_digest_inputs_are_refused_when_not_digests(function: Any, field: str, others: dict[str, Any]) -> None:
    """The error names the offending input, so an operator can tell which upstream value is wrong."""
    with pytest.raises(ValueError, match=f"^{field} must be a sha256"):
        function(**{field: "sha256:" + "A" * 64}, **others)
    function(**{field: BASE["sealed_payload_digest"]}, **others)


def test_parent_plan_refuses_a_non_digest_profile_contract() -> None:
    values = {k: BASE[k] for k in ("frozen_parent_digest", "compiled_plan_digest", "planner_algorithm_version",
                                   "ordered_child_descriptors", "complete_coverage_proof")}
    with pytest.raises(ValueError, match=r"^profile_contract_digest must be a sha256"):
        ident.parent_plan_digest(profile_contract_digest="sha256:", **values)


@pytest.mark.parametrize("revision", [-1, True, False])
def test_generation_refuses_negative_or_boolean_revisions(revision: Any) -> None:
    with pytest.raises(ValueError, match="correction_revision"):
        ident.Generation("2026-08-30T00:00:00Z", revision)


def test_generation_accepts_zero_and_orders_by_instant_then_revision() -> None:
    assert ident.Generation("2026-08-30T00:00:00Z").correction_revision == 0
    assert ident.Generation("2026-08-30T00:00:00Z", 0) < ident.Generation("2026-08-30T00:00:00Z", 1)
    assert ident.Generation("2026-08-29T23:59:59Z", 9) < ident.Generation("2026-08-30T00:00:00Z", 0)


def test_the_rendered_path_must_be_relative_to_the_bound_authority() -> None:
    for path in ("https://evil.example/x", "v1/jobs", ""):
        with pytest.raises(ValueError, match="relative to the bound authority"):
            compute({**BASE, "normalized_rendered_path_and_query": path})


# "2026-8-30T0:0:0Z" is accepted by strptime: only the fixed-width pattern refuses it.
@pytest.mark.parametrize("bad", ["2026-8-30T0:0:0Z", "2026-08-30T00:00:00", "x2026-08-30T00:00:00Z",
                                 "2026-08-30T00:00:00Zx", "2026-13-01T00:00:00Z", "2026-08-30T24:00:00Z"])
def test_generation_refuses_non_canonical_instants(bad: str) -> None:
    with pytest.raises(ValueError):
        ident.Generation(bad)
