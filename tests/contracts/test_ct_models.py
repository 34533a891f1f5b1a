"""Contract models: closed and frozen, bindings and refs validated, no echo of bad values, and the
package stays free of I/O libraries."""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import sink.contracts as contracts
from sink.contracts import ConnectionBinding, DeliveryOverrides, RequestSpec, WorkloadManifest

SENTINEL = "SENTINEL-model-91c2-CANARY"

LOCAL_BINDING: dict[str, Any] = {
    "connection_type": "rest",
    "authority": "http://127.0.0.1:18080",
    "local": True,
    "auth_provider": "bearer",
    "credential_ref": "env://MOCK_TOKEN",
    "remote_principal_id": "p",
    "remote_account_id": "a",
    "remote_resource_namespace": "ns",
    "tls_policy_ref": "loopback-plaintext@1",
    "network_policy_ref": "loopback-only@1",
}


def _codes(exc: ValidationError) -> set[str]:
    return {error["type"] for error in exc.errors()}


def test_every_public_model_is_frozen_and_closed() -> None:
    models = [obj for obj in vars(contracts).values()
              if inspect.isclass(obj) and issubclass(obj, BaseModel)]
    assert len(models) > 25
    for model in models:
        assert model.model_config.get("frozen") is True, model.__name__
        assert model.model_config.get("extra") == "forbid", model.__name__


def test_models_are_immutable() -> None:
    overrides = DeliveryOverrides(preferred_window_days=2)
    with pytest.raises(ValidationError):
        overrides.preferred_window_days = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "reference",
    ["env://MOCK_TOKEN", "vault://path/to/token", "vault://kv/receiver#token", "file:///run/secrets/token"],
)
def test_credential_references_are_accepted(reference: str) -> None:
    assert ConnectionBinding.model_validate({**LOCAL_BINDING, "credential_ref": reference}).credential_ref == reference


@pytest.mark.parametrize(
    "value",
    [SENTINEL, f"Bearer {SENTINEL}", f"env://{SENTINEL}", f"vault://x?token={SENTINEL}",
     f"https://{SENTINEL}@vault.example/x", f"file://relative/{SENTINEL}"],
)
def test_credential_values_are_refused_without_echo(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ConnectionBinding.model_validate({**LOCAL_BINDING, "credential_ref": value})
    assert _codes(caught.value) == {"contract.plaintext_secret"}
    assert SENTINEL not in str(caught.value)
    assert SENTINEL not in repr(caught.value)


def test_credential_ref_traversal_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        ConnectionBinding.model_validate({**LOCAL_BINDING, "credential_ref": "file:///run/../etc/shadow"})
    assert _codes(caught.value) == {"contract.path_traversal"}


def test_validation_errors_never_echo_inputs() -> None:
    with pytest.raises(ValidationError) as caught:
        ConnectionBinding.model_validate({**LOCAL_BINDING, "remote_principal_id": 5, "tls_policy_ref": SENTINEL})
    assert SENTINEL not in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"authority": "https://receiver.example.test"}, "contract.invalid_authority"),
        ({"authority": "https://127.0.0.1:8443"}, None),
        ({"authority": "http://[::1]:18080"}, None),
        ({"local": False}, "contract.insecure_authority"),
        ({"authority": "http://10.1.2.3:80"}, "contract.insecure_authority"),
        ({"authority": "https://receiver.example.test/"}, "contract.invalid_authority"),
        ({"authority": "https://receiver.example.test?x=1"}, "contract.invalid_authority"),
        ({"authority": "https://receiver.example.test#f"}, "contract.invalid_authority"),
        ({"authority": "https://receiver.example.test:0"}, "contract.invalid_authority"),
        ({"authority": "https://receiver.example.test:99999"}, "contract.invalid_authority"),
        ({"authority": "https://u@receiver.example.test"}, "contract.plaintext_secret"),
        ({"authority": "https://rec eiver.example.test"}, "contract.control_character"),
        ({"authority": "ws://127.0.0.1:18080"}, "contract.insecure_authority"),
        ({"auth_provider": "none", "credential_ref": None}, None),
        ({"auth_provider": "none"}, "contract.invalid_value"),
        ({"auth_provider": "mtls"}, "contract.insecure_authority"),
        ({"auth_provider": "api_key_header"}, "contract.invalid_value"),
        ({"auth_provider": "api_key_header", "api_key_header": "X-Api-Key"}, None),
        ({"credential_ref": None}, "contract.missing_field"),
        ({"auth_provider": "hmac_sigv4"}, "literal_error"),
    ],
)
def test_local_binding_rules(changes: dict[str, Any], code: str | None) -> None:
    document = {**LOCAL_BINDING, **changes}
    if code is None:
        ConnectionBinding.model_validate(document)
        return
    with pytest.raises(ValidationError) as caught:
        ConnectionBinding.model_validate(document)
    assert code in _codes(caught.value)


def test_non_local_binding_needs_attested_identity() -> None:
    document = {**LOCAL_BINDING, "authority": "https://receiver.example.test", "local": False}
    with pytest.raises(ValidationError) as caught:
        ConnectionBinding.model_validate(document)
    assert _codes(caught.value) == {"contract.missing_field"}
    identity = {"mode": "platform_attested", "evidence_ref": "evidence://x/1",
                "verified_at": "2026-08-30T08:00:00Z", "valid_until": "2026-11-28T08:00:00Z"}
    assert ConnectionBinding.model_validate({**document, "remote_identity": identity}).remote_identity is not None
    backwards = {**identity, "valid_until": "2026-08-01T00:00:00Z"}
    with pytest.raises(ValidationError):
        ConnectionBinding.model_validate({**document, "remote_identity": backwards})
    naive = {**identity, "verified_at": "2026-08-30T08:00:00"}
    with pytest.raises(ValidationError):
        ConnectionBinding.model_validate({**document, "remote_identity": naive})


def test_authentication_semantics_exclude_the_locator() -> None:
    binding = ConnectionBinding.model_validate(LOCAL_BINDING)
    assert binding.authentication_semantics == {"provider": "bearer", "api_key_header": None}


REQUEST: dict[str, Any] = {"method": "POST", "path": "/x", "media_type": "application/json",
                           "body": {"type": "json_array"}}


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"method": "DELETE"}, "contract.unsupported_method"),
        ({"method": "GET"}, "contract.unsupported_method"),
        ({"method": "post"}, "contract.unsupported_method"),
        ({"headers": {"Content-Type": "text/plain"}}, "contract.forbidden_header"),
        ({"headers": {"X-Api-Key": "abc"}}, "contract.forbidden_header"),
        ({"headers": {"X-A": "1", "x-a": "2"}}, "contract.duplicate_key"),
        ({"headers": {"Bad Name": "1"}}, "contract.invalid_value"),
        ({"query": {"q": "{receipt.id}"}}, "contract.bad_symbol"),
        ({"media_type": "text/csv"}, "contract.media_type_mismatch"),
        ({"body": {"type": "form_urlencoded"}}, "contract.unsupported_body"),
        ({"body": {"type": "json_array", "compression": "brotli"}}, "literal_error"),
        ({"headers": {f"X-H{i}": "v" for i in range(17)}}, "contract.invalid_value"),
    ],
)
def test_request_rules(changes: dict[str, Any], code: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RequestSpec.model_validate({**REQUEST, **changes})
    assert code in _codes(caught.value)


def test_multipart_body_bounds() -> None:
    part = {"name": "file", "format": "csv", "compression": "gzip", "content_type": "application/gzip",
            "filename": "{receiver_mutation_key}.csv.gz"}
    base = {**REQUEST, "media_type": "multipart/form-data"}
    ok = RequestSpec.model_validate({**base, "body": {"type": "multipart_file", "payload_part": part,
                                                      "scalar_parts": {"day": {"value_from": "scope.from",
                                                                               "format": "date"}}}})
    assert ok.body.type == "multipart_file"
    too_many = {f"p{i}": {"value": "x"} for i in range(9)}
    for scalar_parts, code in [
        (too_many, "contract.invalid_value"),
        ({"file": {"value": "x"}}, "contract.invalid_value"),
        ({"a": {"value_from": "scope.from", "value": "x"}}, "contract.invalid_value"),
        ({"a": {"value_from": "receipt.id"}}, "contract.bad_symbol"),
        ({"a": {"value": "{resource}"}}, "contract.bad_symbol"),
        ({"a": {"value_from": "resource", "format": "date"}}, "contract.invalid_value"),
    ]:
        with pytest.raises(ValidationError) as caught:
            RequestSpec.model_validate({**base, "body": {"type": "multipart_file", "payload_part": part,
                                                         "scalar_parts": scalar_parts}})
        assert code in _codes(caught.value), scalar_parts


def test_workload_profile_ref_shape() -> None:
    document: dict[str, Any] = {
        "logical_route_id": "r1",
        "sink": {"type": "rest", "connection_ref": "c", "operation_profile_ref": "mock.dataset-jobs@1",
                 "resource": "m", "payload": {"mapping_ref": "m.v1"},
                 "mutation": {"kind": "partition_replace", "generation_from": "scheduled_interval",
                              "scope": {"type": "inclusive_date_window", "source_field": "business_date"}}},
    }
    manifest = WorkloadManifest.model_validate(document)
    assert (manifest.sink.profile_id, manifest.sink.profile_version) == ("mock.dataset-jobs", 1)
    for bad in ("mock.dataset-jobs", "mock@0", "Mock@1", "mock@1@2"):
        with pytest.raises(ValidationError):
            WorkloadManifest.model_validate({**document, "sink": {**document["sink"], "operation_profile_ref": bad}})


def test_contracts_import_no_io_libraries() -> None:
    code = (
        "import sys, sink.contracts\n"
        "banned = {'httpx', 'httpcore', 'requests', 'psycopg', 'sqlite3', 'typer', 'click', 'rich', 'yaml',"
        " 'fastapi', 'uvicorn', 'sink.identity', 'sink.compiler', 'sink.cli'}\n"
        "print(sorted(m for m in sys.modules if m in banned or m.split('.')[0] in banned - {'sink'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("value", [True, "1", 1.0])
def test_integers_are_strict(value: object) -> None:
    document = {"platform_instance_id": "a", "tenant_id": "b", "environment_id": "c", "namespace_revision": value}
    with pytest.raises(ValidationError):
        contracts.EnvironmentSnapshot.model_validate(document)


def test_booleans_are_strict() -> None:
    with pytest.raises(ValidationError):
        ConnectionBinding.model_validate({**LOCAL_BINDING, "local": "yes"})
