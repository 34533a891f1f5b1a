"""A fence's location (header | query) and encoding (raw | sf-string | uuid): what compiles, what is
refused with which stable code (exit 2 on the CLI), what goes on the wire, and that a profile sent raw
keeps its digests and its bytes."""

from __future__ import annotations

import copy
import shutil
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit
from uuid import NAMESPACE_URL, UUID, uuid5

import http_sf
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from sink.cli import app
from sink.compiler import load_document
from sink.compiler.semantics import profile_digests
from sink.contracts.profile import MutationFence, OperationProfile
from sink.contracts.profile_request import RequestSpec
from sink.fence_encoding import FENCE_UUID_NAMESPACE, FenceEncodingError, encode_fence_value
from sink.request_templates import RenderError, RequestSymbols, render_path_and_query, render_semantic_headers

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
PROFILES = SCENARIOS / "profiles"
STRIPE = PROFILES / "mock.stripe-like@1.yaml"
PLACEHOLDER = "{receiver_mutation_key}"
KEY = "sha256:" + "ab" * 32
SENTINEL = "SENTINEL-fence-5d1e-CANARY"


def _stripe() -> dict[str, Any]:
    document = yaml.safe_load(STRIPE.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _query_fence(document: dict[str, Any], encoding: str = "uuid", name: str = "request_id") -> dict[str, Any]:
    document = copy.deepcopy(document)
    document["request"].pop("headers")
    document["request"]["query"][name] = PLACEHOLDER
    fence = document["mutation_fence"]
    fence.pop("header_name")
    fence.update(location="query", query_parameter=name, encoding=encoding)
    return document


def _codes(document: dict[str, Any]) -> set[str]:
    with pytest.raises(ValidationError) as caught:
        OperationProfile.model_validate(document)
    return {error["type"] for error in caught.value.errors()}


def _symbols(key: str = KEY) -> RequestSymbols:
    return RequestSymbols(resource="measurements", delivery_key="sha256:" + "d" * 64, receiver_mutation_key=key,
                          scope_from=date(2026, 3, 1), scope_to=date(2026, 3, 2))


# ---- what compiles ------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["raw", "sf-string", "uuid"])
def test_a_header_fence_takes_every_encoding(encoding: str) -> None:
    document = _stripe()
    document["mutation_fence"]["encoding"] = encoding
    assert OperationProfile.model_validate(document).mutation_fence.encoding == encoding


@pytest.mark.parametrize("encoding", ["raw", "uuid"])
def test_a_query_fence_takes_raw_and_uuid(encoding: str) -> None:
    fence = OperationProfile.model_validate(_query_fence(_stripe(), encoding)).mutation_fence
    assert (fence.location, fence.query_parameter, fence.encoding, fence.header_name) == (
        "query", "request_id", encoding, None)


# ---- what is refused, with which code -----------------------------------------------------------


def _sf_string_in_query(document: dict[str, Any]) -> dict[str, Any]:
    return _query_fence(document, "sf-string")


def _uuid_in_a_file_name(document: dict[str, Any]) -> dict[str, Any]:
    async_profile = yaml.safe_load((PROFILES / "mock.dataset-jobs@1.yaml").read_text(encoding="utf-8"))
    async_profile["mutation_fence"]["encoding"] = "uuid"
    return dict(async_profile)


def _query_without_its_parameter(document: dict[str, Any]) -> dict[str, Any]:
    document = _query_fence(document)
    del document["mutation_fence"]["query_parameter"]
    return document


def _parameter_on_a_header_fence(document: dict[str, Any]) -> dict[str, Any]:
    document["mutation_fence"]["query_parameter"] = "request_id"
    return document


def _parameter_not_declared(document: dict[str, Any]) -> dict[str, Any]:
    document = _query_fence(document)
    del document["request"]["query"]["request_id"]
    return document


def _parameter_not_only_the_key(document: dict[str, Any]) -> dict[str, Any]:
    document = _query_fence(document)
    document["request"]["query"]["request_id"] = "k-" + PLACEHOLDER
    return document


def _parameter_carries_another_symbol(document: dict[str, Any]) -> dict[str, Any]:
    document = _query_fence(document)
    document["request"]["query"]["request_id"] = "{delivery_key}"
    return document


def _quoted_by_hand_and_encoded(document: dict[str, Any]) -> dict[str, Any]:
    # The quotes belong to the encoding, never to the template: '"{key}"' would be sent twice quoted.
    document["request"]["headers"]["Idempotency-Key"] = f'"{PLACEHOLDER}"'
    document["mutation_fence"]["encoding"] = "sf-string"
    return document


def _unknown_encoding(document: dict[str, Any]) -> dict[str, Any]:
    document["mutation_fence"]["encoding"] = "base64"
    return document


def _encoding_on_no_fence(document: dict[str, Any]) -> dict[str, Any]:
    document["request"].pop("headers")
    document["mutation_fence"] = {"type": "none", "encoding": "uuid"}
    return document


def _bad_parameter_name(document: dict[str, Any]) -> dict[str, Any]:
    return _query_fence(document, name="request id")


def _receiver_key_in_the_query(document: dict[str, Any]) -> dict[str, Any]:
    document = _query_fence(document)
    document["mutation_fence"]["type"] = "fingerprint_ledger"
    return document


REFUSED = {
    _sf_string_in_query: {"contract.unsupported_fence_encoding"},
    _uuid_in_a_file_name: {"contract.unsupported_fence_encoding"},
    _query_without_its_parameter: {"contract.invalid_value"},
    _parameter_on_a_header_fence: {"contract.invalid_value"},
    _parameter_not_declared: {"contract.fence_mismatch"},
    _parameter_not_only_the_key: {"contract.fence_mismatch"},
    _parameter_carries_another_symbol: {"contract.fence_mismatch"},
    _quoted_by_hand_and_encoded: {"contract.fence_mismatch"},
    _unknown_encoding: {"literal_error"},
    _encoding_on_no_fence: {"contract.invalid_value"},
    _bad_parameter_name: {"string_pattern_mismatch", "contract.invalid_value"},
}


@pytest.mark.parametrize("case", list(REFUSED), ids=lambda case: case.__name__)
def test_unsupported_fences_are_refused_with_a_stable_code(case: Any) -> None:
    codes = _codes(case(_stripe()))
    assert codes and codes <= REFUSED[case], codes


def test_a_fingerprint_ledger_may_read_its_key_from_the_query() -> None:
    assert OperationProfile.model_validate(_receiver_key_in_the_query(_stripe())).mutation_fence.location == "query"


def _scenario_tree(tmp_path: Path, profile: dict[str, Any]) -> Path:
    root = tmp_path / "scenarios"
    for name in ("profiles", "bindings", "workloads", "environments", "mappings"):
        shutil.copytree(SCENARIOS / name, root / name)
    (root / "profiles" / "mock.stripe-like@1.yaml").write_text(yaml.safe_dump(profile), encoding="utf-8")
    return root / "workloads" / "measurements-sync-stripe-like.yaml"


@pytest.mark.parametrize(("case", "code"), [(_sf_string_in_query, "contract.unsupported_fence_encoding"),
                                            (_parameter_not_declared, "contract.fence_mismatch")],
                         ids=["sf-string-in-query", "parameter-not-declared"])
def test_the_cli_refuses_an_unsupported_fence_with_exit_2(tmp_path: Path, case: Any, code: str) -> None:
    profile = case(_stripe())
    profile["description"] = SENTINEL
    result = CliRunner().invoke(app, ["check", str(_scenario_tree(tmp_path, profile))])
    assert result.exit_code == 2, result.output
    assert f"error[{code}]" in result.stderr
    assert "Traceback" not in result.output and SENTINEL not in result.output


# ---- what goes on the wire ----------------------------------------------------------------------


def _query_value(profile: OperationProfile, key: str = KEY) -> str:
    target = render_path_and_query(profile.request, _symbols(key), profile.mutation_fence)
    values = [value for name, value in parse_qsl(urlsplit(target).query) if name == "request_id"]
    assert len(values) == 1
    return values[0]


def test_a_uuid_fence_is_one_name_based_uuid_per_key_and_the_same_on_every_render() -> None:
    profile = OperationProfile.model_validate(_query_fence(_stripe()))
    first = _query_value(profile)
    assert first == _query_value(profile)  # a replay renders the same request id
    assert UUID(first).version == 5
    assert first == str(UUID(first))  # canonical lower-case 8-4-4-4-12
    assert first != _query_value(profile, "sha256:" + "ac" * 32)
    assert first != "00000000-0000-0000-0000-000000000000"


def test_the_uuid_namespace_is_the_documented_one() -> None:
    # Fixed forever: a new namespace would give an in-flight delivery's replay another request id.
    assert uuid5(NAMESPACE_URL, "urn:restproof:fence:receiver_mutation_key") == FENCE_UUID_NAMESPACE
    # A key's request id is pinned too: the same delivery key maps to this UUID in every release.
    assert encode_fence_value(KEY, "uuid") == "6f140cb7-c030-5b12-be14-6ade5eb1a6bb"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=200))
def test_an_sf_string_fence_parses_back_to_the_key(key: str) -> None:
    encoded = encode_fence_value(key, "sf-string")
    assert encoded.startswith('"') and encoded.endswith('"')
    parsed = http_sf.parse(encoded.encode("ascii"), tltype="item")
    assert (parsed[0] if isinstance(parsed, tuple) else parsed) == key


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=64))
def test_a_uuid_fence_is_never_the_zero_uuid_and_is_a_function_of_the_key(key: str) -> None:
    value = encode_fence_value(key, "uuid")
    assert UUID(value).version == 5 and value == encode_fence_value(key, "uuid")
    assert UUID(value).int != 0


@pytest.mark.parametrize("key", ["caf\u00e9", "line\nbreak", "tab\there"])
def test_a_key_an_sf_string_cannot_carry_is_refused_without_echo(key: str) -> None:
    with pytest.raises(FenceEncodingError) as caught:
        encode_fence_value(key, "sf-string")
    assert key not in str(caught.value)


def test_the_sf_string_header_is_quoted_and_the_other_headers_are_not() -> None:
    document = _stripe()
    document["request"]["headers"]["X-Trace-Key"] = PLACEHOLDER  # the same symbol, not the fence's field
    document["mutation_fence"]["encoding"] = "sf-string"
    profile = OperationProfile.model_validate(document)
    headers = dict(render_semantic_headers(profile.request, _symbols(), profile.mutation_fence))
    assert headers == {"idempotency-key": f'"{KEY}"', "x-trace-key": KEY}


def test_the_renderer_refuses_a_fence_field_that_is_not_exactly_its_placeholder() -> None:
    # A spec and a fence that each validate alone but disagree (a caller that skipped the profile).
    spec = RequestSpec.model_validate({**_stripe()["request"], "headers": {"Idempotency-Key": "k-" + PLACEHOLDER}})
    fence = MutationFence.model_validate({**_stripe()["mutation_fence"], "encoding": "sf-string"})
    with pytest.raises(RenderError) as caught:
        render_semantic_headers(spec, _symbols(), fence)
    assert caught.value.code == "render.bad_template"


def test_the_renderer_refuses_a_key_the_encoding_cannot_carry_without_echo() -> None:
    profile = OperationProfile.model_validate({**_stripe(), "mutation_fence": {**_stripe()["mutation_fence"],
                                                                              "encoding": "sf-string"}})
    with pytest.raises(RenderError) as caught:
        render_semantic_headers(profile.request, _symbols(SENTINEL + "\u00e9"), profile.mutation_fence)
    assert caught.value.code == "render.invalid_value" and SENTINEL not in str(caught.value)


# ---- profiles sent raw are unchanged ------------------------------------------------------------


ENCODED_PROFILES = {"mock.aip-155-request-id@2": "uuid", "mock.ietf-idempotency-draft@2": "sf-string",
                    # the certification matrix's 5 s retention variant (retention-lapse rows)
                    "mock.ietf-idempotency-draft-short-keys@1": "sf-string",
                    "mock.aip-155-request-id-short-keys@1": "uuid",
                    # the certification matrix's short-timeout variants (the -wire catalogs)
                    "mock.aip-155-request-id-short-timeouts@1": "uuid",
                    "mock.ietf-idempotency-draft-short-timeouts@1": "sf-string",
                    # the certification matrix's read-only-summary variants (the -summary catalogs)
                    "mock.aip-155-request-id-summary@1": "uuid",
                    "mock.ietf-idempotency-draft-summary@1": "sf-string"}
RAW_PROFILES = sorted(path for path in PROFILES.glob("*.yaml") if path.stem not in ENCODED_PROFILES)


def test_only_the_vendor_profiles_encode_their_fence() -> None:
    encodings = {path.stem: load_document(path, OperationProfile).mutation_fence.encoding
                 for path in PROFILES.glob("*.yaml")}
    assert {stem: encoding for stem, encoding in encodings.items() if encoding != "raw"} == ENCODED_PROFILES


@pytest.mark.parametrize("path", RAW_PROFILES, ids=lambda path: path.stem)
def test_a_raw_fence_renders_the_same_bytes_as_without_a_fence(path: Path) -> None:
    profile = load_document(path, OperationProfile)
    request = profile.request
    assert render_path_and_query(request, _symbols(), profile.mutation_fence) == render_path_and_query(
        request, _symbols())
    assert render_semantic_headers(request, _symbols(), profile.mutation_fence) == render_semantic_headers(
        request, _symbols())


def test_raw_said_or_left_out_is_the_same_identity_and_an_encoding_is_another() -> None:
    plain = OperationProfile.model_validate(_stripe())
    said = _stripe()
    said["mutation_fence"]["encoding"] = "raw"
    quoted = _stripe()
    quoted["mutation_fence"]["encoding"] = "sf-string"
    assert profile_digests(OperationProfile.model_validate(said)) == profile_digests(plain)
    assert profile_digests(OperationProfile.model_validate(quoted))[0] != profile_digests(plain)[0]
    in_query = OperationProfile.model_validate(_query_fence(_stripe(), "raw"))
    assert profile_digests(in_query)[0] != profile_digests(plain)[0]
