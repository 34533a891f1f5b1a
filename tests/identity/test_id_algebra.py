"""Property tests of the identity algebra (seed: "Canonical identity and conflict policy")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sink import identity as ident

SHA = "sha256:" + "ab" * 32
text = st.text(min_size=0, max_size=12)
ident_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)
digests = st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex())


def canonical_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.binary(max_size=8)
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=6), children, max_size=4),
        max_leaves=12,
    )


def _binding(**overrides: Any) -> str:
    fields: dict[str, Any] = {
        "authority_origin": "https://receiver.example.test",
        "remote_principal_id": "principal-a",
        "remote_account_id": "account-1",
        "remote_resource_namespace": "ingest",
        "authentication_semantics": {"provider": "bearer", "header": "authorization"},
        "tls_policy_identity": "corporate-public-tls@1",
        "network_policy_identity": "reference-egress@1",
    }
    fields.update(overrides)
    return ident.receiver_binding_semantics_digest(**fields)


def _operation(**overrides: Any) -> str:
    fields: dict[str, Any] = {
        "method_semantics": "POST",
        "path_query_header_semantics": {"path": "/mock/v1/dataset-jobs", "query": [], "headers": {}},
        "canonical_body_envelope_semantics": {"type": "multipart_file", "format": "csv", "compression": "gzip"},
        "acknowledgement_contract": {"accepted_statuses": [202], "receipt": "/job_id"},
        "mutation_fence_contract": {"type": "receiver_duplicate_key", "location": "payload_filename"},
        "verification_contract": {"all_rows_accounted": True},
    }
    fields.update(overrides)
    return ident.operation_semantics_digest(**fields)


def _rendered(payload_digest: str, headers: dict[str, str] | None = None) -> str:
    return ident.rendered_request_semantics_digest(
        method="POST",
        normalized_rendered_path_and_query="/mock/v1/dataset-jobs",
        semantic_headers=headers or {"Content-Type": "multipart/form-data; boundary=b1"},
        ordered_scalar_multipart_parts=[("range_start", "2026-08-27"), ("range_end", "2026-08-30")],
        payload_part_name="file",
        deterministic_filename="k.csv.gz",
        content_disposition_and_type={"content_type": "application/gzip"},
        multipart_boundary="b1",
        sealed_payload_digest=payload_digest,
    )


def _policy(**overrides: Any) -> str:
    fields: dict[str, Any] = {
        "timeout_policy": {"connect_ms": 2000, "read_ms": 30000},
        "retry_policy": {"max_attempts": 3},
        "distributed_rate_policy": {"submits_per_minute": 60},
        "retention_policy": {"receipt_ttl_s": 86400},
        "observability_policy": {"metrics": "bounded"},
    }
    fields.update(overrides)
    return ident.execution_policy_digest(**fields)


@given(
    st.tuples(ident_text, ident_text, ident_text, st.integers(0, 10)),
    st.tuples(ident_text, ident_text, ident_text, st.integers(0, 10)),
    digests,
)
def test_namespaces_isolate_receiver_keys(a: tuple[str, str, str, int], b: tuple[str, str, str, int], key: str) -> None:
    assume(a != b)
    names = ("platform_instance_id", "tenant_id", "environment_id", "namespace_revision")
    ns_a = ident.operation_namespace(**dict(zip(names, a, strict=True)))
    ns_b = ident.operation_namespace(**dict(zip(names, b, strict=True)))
    assert ns_a != ns_b
    assert ident.receiver_mutation_key(operation_namespace=ns_a, delivery_key=key) != ident.receiver_mutation_key(
        operation_namespace=ns_b, delivery_key=key
    )


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_changed_bytes_keep_delivery_key_and_change_intent(first: bytes, second: bytes) -> None:
    assume(first != second)
    import hashlib

    generation = ident.Generation("2026-08-30T00:00:00Z", 0)
    key_args: dict[str, Any] = {
        "logical_route_id": "route.measurements",
        "target_effect_scope": {"from": "2026-08-27", "to": "2026-08-30"},
        "source_boundary": {"interval": ["2026-08-27", "2026-08-30"]},
        "mutation_kind": "partition_replace",
        "generation": generation,
    }
    # The payload digest is computed outside the key: the key never sees the bytes.
    key_first = ident.delivery_key(**key_args)
    key_second = ident.delivery_key(**key_args)
    assert key_first == key_second
    binding, operation = _binding(), _operation()
    intents = [
        ident.mutation_intent_digest(
            receiver_binding_semantics_digest=binding,
            operation_semantics_digest=operation,
            rendered_request_semantics_digest=_rendered("sha256:" + hashlib.sha256(data).hexdigest()),
        )
        for data in (first, second)
    ]
    assert intents[0] != intents[1]


@given(st.integers(1, 600_000), st.integers(1, 600_000))
def test_policy_only_change_moves_policy_digest_only(read_ms_a: int, read_ms_b: int) -> None:
    assume(read_ms_a != read_ms_b)
    policy_a = _policy(timeout_policy={"connect_ms": 2000, "read_ms": read_ms_a})
    policy_b = _policy(timeout_policy={"connect_ms": 2000, "read_ms": read_ms_b})
    operation = _operation()
    assert policy_a != policy_b
    intent = ident.mutation_intent_digest(
        receiver_binding_semantics_digest=_binding(),
        operation_semantics_digest=operation,
        rendered_request_semantics_digest=_rendered(SHA),
    )
    # Neither the operation semantics nor the intent takes the policy as input ...
    assert _operation() == operation
    assert intent == ident.mutation_intent_digest(
        receiver_binding_semantics_digest=_binding(),
        operation_semantics_digest=_operation(),
        rendered_request_semantics_digest=_rendered(SHA),
    )
    # ... but the full profile contract pins the exact policy.
    contracts = {
        ident.profile_contract_digest(
            operation_semantics_digest=operation,
            execution_policy_digest=policy,
            profile_schema_id="restproof.operation_profile.v1",
            profile_version=1,
        )
        for policy in (policy_a, policy_b)
    }
    assert len(contracts) == 2


@given(ident_text, ident_text)
def test_principal_swap_changes_binding_and_intent(principal_a: str, principal_b: str) -> None:
    assume(principal_a != principal_b)
    binding_a = _binding(remote_principal_id=principal_a)
    binding_b = _binding(remote_principal_id=principal_b)
    assert binding_a != binding_b
    intents = {
        ident.mutation_intent_digest(
            receiver_binding_semantics_digest=binding,
            operation_semantics_digest=_operation(),
            rendered_request_semantics_digest=_rendered(SHA),
        )
        for binding in (binding_a, binding_b)
    }
    assert len(intents) == 2


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_secret_rotation_changes_no_identity(token_a: str, token_b: str) -> None:
    assume(token_a != token_b)
    base = {"Content-Type": "multipart/form-data; boundary=b1"}
    rendered_a = _rendered(SHA, {**base, "Authorization": f"Bearer {token_a}", "Traceparent": token_a})
    rendered_b = _rendered(SHA, {**base, "authorization": f"Bearer {token_b}", "traceparent": token_b})
    assert rendered_a == rendered_b == _rendered(SHA, base)


def test_semantic_header_change_does_change_rendered_request() -> None:
    # The check above would pass trivially if headers were ignored altogether; they are not.
    assert _rendered(SHA, {"Content-Type": "text/csv"}) != _rendered(SHA, {"Content-Type": "application/json"})


def test_semantic_headers_refuse_case_duplicates() -> None:
    with pytest.raises(ValueError, match="duplicate header"):
        ident.semantic_headers({"Idempotency-Key": "a", "idempotency-key": "b"})


@given(st.lists(st.text(max_size=6), min_size=1, max_size=5), st.lists(st.text(max_size=6), min_size=1, max_size=5))
def test_concatenation_never_collides(parts_a: list[str], parts_b: list[str]) -> None:
    assume(parts_a != parts_b)
    assert ident.canonical_encode(parts_a) != ident.canonical_encode(parts_b)
    assert ident.hash_fields("t", {"v": parts_a}) != ident.hash_fields("t", {"v": parts_b})


def test_split_point_is_encoded() -> None:
    assert ident.canonical_encode(("ab", "c")) != ident.canonical_encode(("a", "bc"))
    assert ident.hash_fields("p", {"a": "ab", "b": "c"}) != ident.hash_fields("p", {"a": "a", "b": "bc"})


@given(canonical_values(), canonical_values())
def test_encoding_is_injective_on_distinct_values(a: Any, b: Any) -> None:
    # JSON-like equality (with bytes/bool/int kept distinct) decides sameness; tuples == lists.
    def norm(v: Any) -> Any:
        if isinstance(v, bool):
            return ("bool", v)
        if isinstance(v, int):
            return ("int", v)
        if isinstance(v, bytes):
            return ("bytes", v)
        if isinstance(v, list | tuple):
            return ("list", tuple(norm(x) for x in v))
        if isinstance(v, dict):
            return ("map", tuple(sorted((k, norm(x)) for k, x in v.items())))
        return (type(v).__name__, v)

    if norm(a) == norm(b):
        assert ident.canonical_encode(a) == ident.canonical_encode(b)
    else:
        assert ident.canonical_encode(a) != ident.canonical_encode(b)


def test_types_are_tagged() -> None:
    encodings = {ident.canonical_encode(v) for v in (1, "1", True, b"1", [1], {"1": 1}, None, 0, False)}
    assert len(encodings) == 9


@given(st.dictionaries(st.text(max_size=5), st.integers(), max_size=6))
def test_mapping_order_does_not_matter(mapping: dict[str, int]) -> None:
    reversed_mapping = dict(reversed(list(mapping.items())))
    assert ident.hash_fields("m", {"x": mapping}) == ident.hash_fields("m", {"x": reversed_mapping})


def test_purpose_separates_domains() -> None:
    assert ident.hash_fields("a", {"v": 1}) != ident.hash_fields("b", {"v": 1})


def test_floats_and_foreign_types_are_refused() -> None:
    with pytest.raises(TypeError):
        ident.canonical_encode(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ident.canonical_encode({1: "x"})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        ident.canonical_encode(object())  # type: ignore[arg-type]


def test_generation_is_ordered_and_validated() -> None:
    older = ident.Generation("2026-08-29T00:00:00Z", 5)
    newer = ident.Generation("2026-08-30T00:00:00Z", 0)
    correction = ident.Generation("2026-08-30T00:00:00Z", 1)
    assert older < newer < correction
    for bad in ("2026-08-30", "2026-02-30T00:00:00Z", "2026-08-30T00:00:00+00:00"):
        with pytest.raises(ValueError):
            ident.Generation(bad)
    with pytest.raises(ValueError):
        ident.Generation("2026-08-30T00:00:00Z", -1)


def test_generation_is_part_of_delivery_key() -> None:
    args: dict[str, Any] = {
        "logical_route_id": "r",
        "target_effect_scope": ["2026-08-27", "2026-08-30"],
        "source_boundary": ["2026-08-27", "2026-08-30"],
        "mutation_kind": "partition_replace",
    }
    keys = {
        ident.delivery_key(**args, generation=ident.Generation("2026-08-30T00:00:00Z", revision))
        for revision in (0, 1)
    }
    assert len(keys) == 2


def test_effect_domain_ignores_namespace_and_kind() -> None:
    # The function has no namespace or mutation-kind parameter by design; what it does take matters.
    base = {
        "remote_principal_id": "p",
        "remote_account_id": "a",
        "remote_resource_namespace": "ingest",
        "receiver_resource_id": "measurements",
        "effect_conflict_group": "mock.measurements",
    }
    domain = ident.effect_conflict_domain(**base)
    assert domain != ident.effect_conflict_domain(**{**base, "effect_conflict_group": "other"})
    assert domain != ident.effect_conflict_domain(**{**base, "remote_account_id": "b"})


def test_origin_is_canonicalised_and_bare() -> None:
    assert ident.canonical_origin("HTTPS://Receiver.Example.TEST:443") == "https://receiver.example.test"
    assert ident.canonical_origin("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert _binding(authority_origin="https://RECEIVER.example.test") == _binding()
    for bad in ("https://u:p@h", "https://h/path", "https://h?q=1", "ftp://h", "https://h#f"):
        with pytest.raises(ValueError):
            ident.canonical_origin(bad)


def test_rendered_path_must_be_relative() -> None:
    with pytest.raises(ValueError):
        ident.rendered_request_semantics_digest(
            method="POST",
            normalized_rendered_path_and_query="https://evil.example/x",
            semantic_headers={},
            ordered_scalar_multipart_parts=[],
            payload_part_name=None,
            deterministic_filename=None,
            content_disposition_and_type=None,
            multipart_boundary=None,
            sealed_payload_digest=SHA,
        )


def test_digest_inputs_must_be_digests() -> None:
    with pytest.raises(ValueError):
        ident.receiver_mutation_key(operation_namespace="namespace-a", delivery_key=SHA)


_GOLDEN_SCRIPT = """
import json
from sink import identity as i
ns = i.operation_namespace(platform_instance_id="p", tenant_id="t", environment_id="dev",
    namespace_revision=1)
key = i.delivery_key(logical_route_id="r", target_effect_scope={"from": "2026-08-27", "to": "2026-08-30"},
    source_boundary={"b": [1, 2, {"z": None, "a": True}]}, mutation_kind="partition_replace",
    generation=i.Generation("2026-08-30T00:00:00Z", 0))
result = {"ns": ns, "key": key, "rmk": i.receiver_mutation_key(operation_namespace=ns, delivery_key=key)}
if __name__ == "__main__":
    print(json.dumps(result))
"""

# Pinned: a change here means every admitted operation's identity would change. Bump
# IDENTITY_ENCODING_VERSION and migrate instead of editing these values.
GOLDEN = {
    "ns": "sha256:30d3274200df9c5d1e482ce5f553a2fcd67ece773f521e6f43da8b6fe70bfa40",
    "key": "sha256:8741b6b9a8b2dc1c49f3c3c7b54046719ee579b000de844ac5baf5bdbeedc780",
    "rmk": "sha256:8fd1d7f1d29f203dd254af6f597c15776db2b36a3c06a8644cc7ad869b3fc954",
}


def test_encoding_matches_its_written_specification() -> None:
    # Written out independently of the encoder: tag byte, 8-byte big-endian length, then content.
    def n(x: int) -> bytes:
        return x.to_bytes(8, "big")

    assert ident.canonical_encode("ab") == b"S" + n(2) + b"ab"
    assert ident.canonical_encode(-12) == b"I" + n(3) + b"-12"
    assert ident.canonical_encode([None, True, b"\x00"]) == b"L" + n(3) + b"N" + b"T" + b"Y" + n(1) + b"\x00"
    assert ident.canonical_encode({"b": 1, "a": False}) == (
        b"M" + n(2) + b"S" + n(1) + b"a" + b"F" + b"S" + n(1) + b"b" + b"I" + n(1) + b"1"
    )
    import hashlib

    expected = hashlib.sha256(
        ident.canonical_encode([ident.IDENTITY_ENCODING_VERSION, "p", {"v": "x"}])
    ).hexdigest()
    assert ident.hash_fields("p", {"v": "x"}) == "sha256:" + expected


@pytest.mark.parametrize("hash_seed", ["0", "1", "4242"])
def test_digests_are_stable_across_processes_and_hash_seeds(hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _GOLDEN_SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    remote = json.loads(out.stdout)
    namespace: dict[str, Any] = {"__name__": "golden"}
    exec(compile(_GOLDEN_SCRIPT, "<golden>", "exec"), namespace)
    assert remote == namespace["result"]
    assert remote == GOLDEN
