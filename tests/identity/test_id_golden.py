"""Pinned golden digests, one per purpose label (issue 14).

A change of any value here means every stored identity of that kind would change: admitted
operations would no longer match their delivery keys and fences. Bump IDENTITY_ENCODING_VERSION
and migrate instead of editing these values. The inputs are id_graph.BASE.
"""

from __future__ import annotations

import hashlib

import pytest
from id_graph import BASE, compute

from sink import identity as ident

# digest name -> (purpose label, pinned digest of id_graph.BASE)
GOLDEN: dict[str, tuple[str, str]] = {
    "operation_namespace": (
        "operation_namespace", "sha256:2c387850f32c6b2d02febc9f2bab1746d2a2657c4be46dff9d09f53e6b4170ee"),
    "delivery_key": (
        "delivery_key", "sha256:8d7f25ef90f48581c17d5ca5890c3115d4ece41e4e775ac9952d46f96017ef11"),
    "receiver_mutation_key": (
        "receiver_mutation_key", "sha256:d3dc63fed2cc1fdc34bf9ee5569f09196c5ae678d2845bbae04980b039bf41f8"),
    "receiver_binding": (
        "receiver_binding_semantics", "sha256:5cfcf11632a02b42a7615b6b824a2fd959305f63140c9e49cbb027f873e82196"),
    "operation_semantics": (
        "operation_semantics", "sha256:f0df0b11eea4de7abcd851b8ede37a4d14ff936c411080e70bcb055866584026"),
    "rendered_request": (
        "rendered_request_semantics", "sha256:b45633d6fcd4b5495d3c3ca495079db5f1d9e322d9635c182ce4f908dc162c54"),
    "mutation_intent": (
        "mutation_intent", "sha256:8ad878748ea54402d588cc9247a0bece7ce567683c2408ffd0e6336a93e69d82"),
    "execution_policy": (
        "execution_policy", "sha256:3535c71e8edea563f2728f312cca9125fb70a5e9f5004c4f1d2121251d172e63"),
    "profile_contract": (
        "profile_contract", "sha256:21e168dc0d108ceccc37f073242b19b0023b33673d6f9b9b8bf949ebc262f1df"),
    "effect_conflict_domain": (
        "effect_conflict_domain", "sha256:31ef1a704da0638bef4389444ce7e066affe126ddb81d92711ec397712f2e480"),
    "parent_plan": (
        "parent_plan", "sha256:3a71b2562f2b494bd0606b07989080e4e1b48e7557aea872682b3f2acd12877c"),
}


def test_every_purpose_is_pinned() -> None:
    assert set(compute(BASE)) == set(GOLDEN)
    assert len({label for label, _ in GOLDEN.values()}) == len(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_digest(name: str) -> None:
    assert compute(BASE)[name] == GOLDEN[name][1]


def test_operation_namespace_is_the_hash_of_its_labelled_fields() -> None:
    """The purpose label and field names are part of the identity, written out independently."""
    fields = {"platform_instance_id": "platform-1", "tenant_id": "tenant-a", "environment_id": "dev",
              "namespace_revision": 1}
    n = lambda k: k.to_bytes(8, "big")  # noqa: E731
    def s(text: str) -> bytes:
        return b"S" + n(len(text.encode())) + text.encode()
    body = b"M" + n(4) + b"".join(
        s(key) + (b"I" + n(1) + b"1" if key == "namespace_revision" else s(str(fields[key])))
        for key in sorted(fields)
    )
    encoded = b"L" + n(3) + s(ident.IDENTITY_ENCODING_VERSION) + s("operation_namespace") + body
    assert ident.IDENTITY_ENCODING_VERSION == "restproof.identity.v1"
    assert GOLDEN["operation_namespace"][1] == "sha256:" + hashlib.sha256(encoded).hexdigest()
