"""Builders shared by the runtime policy tests: the bundled mock profiles (with overrides) and
transport outcomes of each certainty (``sink.testing.outcomes``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sink.bounded_yaml import load_bounded_yaml_file
from sink.contracts.profile import OperationProfile
from sink.contracts.state import StateTuple
from sink.design.query import DesignContract, load_design_contract
from sink.testing.outcomes import BODY_DIGEST, not_started, reached_peer
from sink.testing.outcomes import responded as response

__all__ = [
    "ASYNC_PROFILE", "BODY_DIGEST", "CONTRACT", "PROFILES", "SYNC_PROFILE", "no_fence", "not_started", "profile",
    "reached_peer", "response", "tuple_named",
]

PROFILES = Path(__file__).resolve().parents[2] / "scenarios" / "profiles"
ASYNC_PROFILE = "mock.dataset-jobs@1.yaml"
SYNC_PROFILE = "mock.json-batches@1.yaml"

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
