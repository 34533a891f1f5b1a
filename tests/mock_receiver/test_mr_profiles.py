"""Every personality ships an operation profile that the sink's compiler accepts and that matches the
receiver's routes and fence, so the certification matrix can run against it. (The test imports the
sink; mock_receiver itself never does.)"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit
from uuid import UUID

import pytest
import yaml
from mr_support import RECEIVERS, REPO, bundled

from mock_receiver.fence_keys import check_key
from sink.compiler import compile_files, default_paths, load_document
from sink.contracts.profile import OperationProfile
from sink.request_templates import RequestSymbols, render_path_and_query, render_semantic_headers

pytestmark = pytest.mark.timeout(60)

PROFILES = REPO / "scenarios" / "profiles"
SCENARIOS = REPO / "scenarios"
# Personality -> its profile; dataset-jobs and json-batches had theirs before (mock.dataset-jobs@1 and
# mock.json-batches@1).
PERSONALITIES = {"stripe-like": "mock.stripe-like@1", "ietf-idempotency-draft": "mock.ietf-idempotency-draft@2",
                 "aip-155-request-id": "mock.aip-155-request-id@2", "fingerprint-ledger": "mock.fingerprint-ledger@1",
                 "bare-409": "mock.bare-409@1", "json-batches": "mock.json-batches@1"}
FENCES = {"idempotency_key": "idempotency_key_header", "fingerprint_ledger": "fingerprint_ledger",
          "bare_409": "none", "none": "none"}
SYNC_PATH = "/mock/v1/resources/{resource}/batches"
# The receiver's key syntax -> the sink's fence encoding that produces it (an RFC 8941 String is quoted
# on the wire, an AIP-155 request id is a UUID; the receiver's other syntaxes take the key as it is).
ENCODINGS = {"sf_string": "sf-string", "uuid": "uuid", "token": "raw", "printable": "raw"}


def test_every_personality_has_a_profile() -> None:
    assert {path.stem for path in RECEIVERS.glob("*.yaml")} - {"dataset-jobs"} == set(PERSONALITIES)


@pytest.mark.parametrize(("personality", "profile_ref"), sorted(PERSONALITIES.items()))
def test_profile_matches_the_receivers_route_and_fence(personality: str, profile_ref: str) -> None:
    behaviour = bundled(personality)
    profile = load_document(PROFILES / f"{profile_ref}.yaml", OperationProfile)
    assert profile.ref == profile_ref
    assert profile.protocol_family == "sync_batch" and behaviour.sync.enabled
    assert (profile.request.method, profile.request.path) == ("POST", SYNC_PATH)
    fence = behaviour.sync.fence
    assert profile.mutation_fence.type == FENCES[fence.type.value]
    if profile.mutation_fence.type != "none":
        sink_fence = profile.mutation_fence
        assert sink_fence.encoding == ENCODINGS[fence.key_syntax]
        if fence.location == "query":
            assert sink_fence.location == "query" and sink_fence.query_parameter in (fence.query_parameters or [])
            assert profile.request.query[str(sink_fence.query_parameter)] == "{receiver_mutation_key}"
        else:
            assert sink_fence.location == "header" and sink_fence.header_name == fence.header
            assert profile.request.header_value(fence.header) == "{receiver_mutation_key}"
        expected_ttl = None if fence.retention_seconds is None else int(fence.retention_seconds)
        assert profile.mutation_fence.retention_ttl_seconds == expected_ttl
    else:
        assert fence.header not in (profile.request.headers or {})
    assert behaviour.sync.success_status in profile.acknowledgement.accepted_statuses
    limits = behaviour.limits
    assert profile.limits.max_wire_bytes <= limits.max_body_bytes
    assert profile.limits.max_decoded_bytes <= limits.max_decoded_bytes
    assert profile.limits.max_rows <= limits.max_rows
    kinds = {spec.mutation.value for spec in behaviour.resources.values()}
    assert {str(kind) for kind in profile.supported_mutations} <= kinds


@pytest.mark.parametrize("profile_ref", sorted(PERSONALITIES.values()))
def test_the_sinks_compiler_compiles_a_workload_against_each_profile(tmp_path: Path, profile_ref: str) -> None:
    workload = yaml.safe_load((SCENARIOS / "workloads" / "measurements-sync.yaml").read_text())
    workload["sink"]["operation_profile_ref"] = profile_ref
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(workload))
    plan = compile_files(default_paths(path, profiles_dir=PROFILES, bindings_dir=SCENARIOS / "bindings",
                                       environment=SCENARIOS / "environments" / "local.yaml",
                                       mappings_dir=SCENARIOS / "mappings"))
    assert plan.profile.ref == profile_ref


def _fenced_personalities() -> list[tuple[str, str]]:
    return [(name, ref) for name, ref in sorted(PERSONALITIES.items())
            if load_document(PROFILES / f"{ref}.yaml", OperationProfile).mutation_fence.type != "none"]


def _wire_key(profile: OperationProfile, key: str) -> str:
    """The fence value the sink puts on the wire for ``key``, read back from its rendered request."""
    symbols = RequestSymbols(resource="measurements", delivery_key="sha256:" + "d" * 64, receiver_mutation_key=key,
                             scope_from=date(2026, 3, 1), scope_to=date(2026, 3, 2))
    fence = profile.mutation_fence
    if fence.location == "query":
        target = render_path_and_query(profile.request, symbols, fence)
        values = [value for name, value in parse_qsl(urlsplit(target).query) if name == fence.query_parameter]
        assert len(values) == 1
        return values[0]
    headers = [value for name, value in render_semantic_headers(profile.request, symbols, fence)
               if name == str(fence.header_name).lower()]
    assert len(headers) == 1
    return headers[0]


@pytest.mark.parametrize(("personality", "profile_ref"), _fenced_personalities())
def test_the_receiver_reads_the_sinks_rendered_fence_as_one_stable_key_per_delivery(
        personality: str, profile_ref: str) -> None:
    fence = bundled(personality).sync.fence
    profile = load_document(PROFILES / f"{profile_ref}.yaml", OperationProfile)
    first, second = "sha256:" + "0" * 64, "sha256:" + "1" * 63 + "2"
    read = {key: check_key(_wire_key(profile, key), fence.key_syntax, "the fence") for key in (first, second)}
    assert check_key(_wire_key(profile, first), fence.key_syntax, "the fence") == read[first]  # a replay: same key
    assert read[first] != read[second]
    if fence.key_syntax == "uuid":
        assert read[first] != "00000000-0000-0000-0000-000000000000"
        assert UUID(read[first]).version == 5
    else:  # the receiver reads back exactly the sink's key (an sf-string unquoted)
        assert read == {first: first, second: second}
