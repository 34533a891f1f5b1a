"""Validator: the bundled contract passes; every rule fails on a contract that breaks it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from dc_mutations import MUTATIONS, bundled_document, mutated, transition
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from sink.design.findings import Finding
from sink.design.validator import ALL_RULE_IDS, RULES, contract_schema, validate_bytes, validate_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "design"


def _rules(findings: list[Finding]) -> set[str]:
    return {finding.rule for finding in findings}


def test_bundled_contract_is_valid() -> None:
    assert validate_document(bundled_document()) == []


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = contract_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_schema_object_is_closed() -> None:
    def objects(node: object) -> list[dict[str, object]]:
        found: list[dict[str, object]] = []
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                found.extend(objects(value))
        elif isinstance(node, list):
            for value in node:
                found.extend(objects(value))
        return found

    for node in objects(contract_schema()):
        closed = node.get("additionalProperties")
        # Either no extra keys at all, or (error_catalog) keys constrained by propertyNames.
        assert closed is False or ("propertyNames" in node and isinstance(closed, dict)), node


def test_every_rule_has_a_negative_case() -> None:
    assert set(MUTATIONS) | {"yaml"} == set(ALL_RULE_IDS)


@pytest.mark.parametrize("rule", sorted(MUTATIONS))
def test_mutation_fails_with_its_rule(rule: str) -> None:
    findings = validate_document(mutated(rule))
    assert rule in _rules(findings), [f.to_dict() for f in findings]
    assert all(f.code.startswith(("design.", "schema.")) for f in findings)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_semantic_mutations_pass_the_schema(rule: str) -> None:
    # A semantic rule is only meaningful if its negative case is not already a schema failure.
    assert "schema" not in _rules(validate_document(mutated(rule)))


def test_findings_are_sorted_and_stable() -> None:
    doc = mutated("checkpoint_requires_full_passed")
    first, second = validate_document(doc), validate_document(doc)
    assert first == second == sorted(first)


def test_error_catalog_exact_set_both_directions() -> None:
    missing = bundled_document()
    del missing["error_catalog"]["REST_DELIVERY_COUNT_MISMATCH"]
    assert "error_catalog" in _rules(validate_document(missing))
    extra = bundled_document()
    extra["stable_error_codes"].append("REST_DELIVERY_INVENTED")
    extra["error_catalog"]["REST_DELIVERY_INVENTED"] = dict(extra["error_catalog"]["REST_DELIVERY_UNSAFE_RETRY"])
    assert "error_catalog" in _rules(validate_document(extra))


def test_unresolved_error_code_on_a_transition() -> None:
    doc = bundled_document()
    transition(doc, "plan_rejected", "planned")["error_codes"] = ["REST_DELIVERY_TYPO"]
    findings = [f for f in validate_document(doc) if f.rule == "error_references"]
    assert findings and findings[0].location.startswith("/transitions/")


def test_retry_due_must_advance_attempt_ordinal() -> None:
    doc = bundled_document()
    transition(doc, "retry_due", "retry_wait")["advances"].remove("attempt_ordinal")
    assert "safe_retry" in _rules(validate_document(doc))


@pytest.mark.parametrize(
    ("tid", "source", "field"),
    [
        ("verified_full", "verifying_expired", "highest_applied_generation"),
        ("reconciled_full", "reconciling_partial_accepted", "highest_applied_generation"),
        ("checkpoint_promoted", "finalized_cancelled_full_eligible", "checkpoint_frontier"),
    ],
)
def test_watermarks_must_advance(tid: str, source: str, field: str) -> None:
    doc = bundled_document()
    transition(doc, tid, source)["advances"].remove(field)
    findings = [f for f in validate_document(doc) if f.rule == "monotonic_fields"]
    assert findings and field in findings[0].message


def test_identities_are_listed_in_derivation_order() -> None:
    doc = bundled_document()
    entries = doc["identities"]["entries"]
    entries.insert(0, entries.pop(next(i for i, e in enumerate(entries) if e["name"] == "mutation_intent_digest")))
    findings = [f for f in validate_document(doc) if f.rule == "identities"]
    assert findings and "before it is defined" in findings[0].message


def test_submit_must_carry_every_model_wide_guard() -> None:
    doc = bundled_document()
    transition(doc, "retry_due", "retry_wait")["cas_preconditions"].remove("generation_admissible")
    findings = [f for f in validate_document(doc) if f.rule == "safe_retry"]
    assert findings and "generation_admissible" in findings[0].message


def test_reconciliation_must_preserve_acknowledgement() -> None:
    doc = bundled_document()
    transition(doc, "reconciled_full", "reconciling_unknown_accepted")["to"] = "finalized_succeeded_full_eligible"
    assert "acknowledgement_preservation" in _rules(validate_document(doc))


def test_finalized_full_passed_must_not_stay_blocked() -> None:
    doc = bundled_document()
    for entry in doc["legal_tuples"]:
        if entry["name"] == "finalized_expired_full_eligible":
            entry["checkpoint_state"] = "BLOCKED"
    assert "forbidden_combinations" in _rules(validate_document(doc))


@pytest.mark.parametrize(
    ("fixture", "rule", "code"),
    [
        ("duplicate_nested_key.yaml", "yaml", "yaml.duplicate_key"),
        ("invalid_utf8.yaml", "yaml", "yaml.invalid_utf8"),
        ("merge_key.yaml", "yaml", "yaml.unsupported_tag"),
        ("python_tag.yaml", "yaml", "yaml.unsupported_tag"),
        ("unknown_top_level_key.yaml", "schema", "schema.additionalProperties"),
        ("wrong_axis_value.yaml", "schema", "schema.enum"),
    ],
)
def test_negative_fixture_files(fixture: str, rule: str, code: str) -> None:
    _, findings = validate_bytes((FIXTURES / fixture).read_bytes(), fixture)
    assert (rule, code) in {(f.rule, f.code) for f in findings}, [f.to_dict() for f in findings]


def test_mutated_document_round_trips_through_yaml_bytes() -> None:
    text = yaml.safe_dump(mutated("terminal_closure"), sort_keys=False).encode()
    document, findings = validate_bytes(text, "mutated.yaml")
    assert document is not None
    assert "terminal_closure" in _rules(findings)


def test_schema_messages_do_not_quote_values() -> None:
    doc = bundled_document()
    doc["legal_tuples"][0]["execution_state"] = "s3cr3t-sentinel"
    findings = validate_document(doc)
    assert findings and all("s3cr3t-sentinel" not in json.dumps(f.to_dict()) for f in findings)


def _paths(node: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found: list[tuple[object, ...]] = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*prefix, index)))
    return found


_BUNDLED_PATHS = [path for path in _paths(bundled_document()) if path]
_REPLACEMENTS = st.sampled_from(
    [None, "", "X", 0, -1, True, [], {}, ["revision"], "FINALIZED", "RUNNING", "sealed", "planned",
     "automatic", "operator_only", "REST_DELIVERY_UNSAFE_RETRY", {"execution_state": ["FINALIZED"]}]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_BUNDLED_PATHS), _REPLACEMENTS), min_size=1, max_size=4))
def test_validator_never_crashes_on_a_mutated_contract(edits: list[tuple[tuple[object, ...], object]]) -> None:
    doc = bundled_document()
    for path, replacement in edits:
        parent: object = doc
        try:
            for part in path[:-1]:
                parent = parent[part]  # type: ignore[index]
            parent[path[-1]] = copy.deepcopy(replacement)  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed this path
    findings = validate_document(doc)
    assert all(isinstance(f, Finding) and f.rule in ALL_RULE_IDS for f in findings)
