"""Builders shared by the runtime policy tests: the bundled mock profiles (with overrides) and
transport outcomes of each certainty."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sink.bounded_yaml import load_bounded_yaml_file
from sink.contracts.profile import OperationProfile
from sink.contracts.state import StateTuple
from sink.contracts.transport import (
    FailureKind,
    JsonScalar,
    ResponseEvidence,
    SendCertainty,
    TransportEvidence,
    TransportOutcome,
    TransportPhase,
)
from sink.design.query import DesignContract, load_design_contract

PROFILES = Path(__file__).resolve().parents[2] / "scenarios" / "profiles"
ASYNC_PROFILE = "mock.dataset-jobs@1.yaml"
SYNC_PROFILE = "mock.json-batches@1.yaml"
BODY_DIGEST = "sha256:" + "ab" * 32

CONTRACT: DesignContract = load_design_contract()


def tuple_named(name: str) -> StateTuple:
    found = CONTRACT.tuple_named(name)
    assert found is not None, name
    return found


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if isinstance(value, Mapping) and value and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def profile(name: str = ASYNC_PROFILE, **overrides: Any) -> OperationProfile:
    """A bundled profile, deep-merged with ``overrides`` and validated again."""
    document = copy.deepcopy(load_bounded_yaml_file(PROFILES / name))
    return OperationProfile.model_validate(_merge(document, overrides))


def no_fence(name: str = SYNC_PROFILE) -> OperationProfile:
    document = copy.deepcopy(load_bounded_yaml_file(PROFILES / name))
    document["mutation_fence"] = {"type": "none"}
    document["request"].get("headers", {}).pop("Idempotency-Key", None)
    if name == ASYNC_PROFILE:
        document["request"]["body"]["payload_part"]["filename"] = "payload.csv.gz"
    return OperationProfile.model_validate(document)


def not_started(failure: FailureKind | None = FailureKind.CONNECT_ERROR,
                phase: TransportPhase | None = TransportPhase.CONNECT,
                steps: tuple[str, ...] = ("connection.connect_tcp.started", "connection.connect_tcp.failed"),
                ) -> TransportOutcome:
    return TransportOutcome(
        TransportEvidence(SendCertainty.NOT_STARTED, phase, failure, 0, steps, 5), None
    )


def reached_peer(failure: FailureKind = FailureKind.READ_TIMEOUT,
                 phase: TransportPhase = TransportPhase.RESPONSE_HEADERS) -> TransportOutcome:
    steps = ("http11.send_request_headers.started", "http11.send_request_headers.complete",
             "http11.send_request_body.started", "http11.send_request_body.complete",
             "http11.receive_response_headers.started", "http11.receive_response_headers.failed")
    return TransportOutcome(
        TransportEvidence(SendCertainty.MAY_HAVE_REACHED_PEER, phase, failure, 1234, steps, 30_000), None
    )


def response(status: int, scalars: Mapping[str, JsonScalar] | None = None,
             headers: Mapping[str, str] | None = None, parse_problem: str | None = None) -> TransportOutcome:
    steps = ("http11.send_request_headers.started", "http11.receive_response_body.complete")
    return TransportOutcome(
        TransportEvidence(SendCertainty.RESPONSE_RECEIVED, TransportPhase.COMPLETE, None, 1234, steps, 40),
        ResponseEvidence(status=status, headers=dict(headers or {}), body_size=64, body_digest=BODY_DIGEST,
                         scalars=dict(scalars or {}), parse_problem=parse_problem),
    )
