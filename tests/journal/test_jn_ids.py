"""Deterministic journal ids: stable, distinct per input, and free of concatenation collisions."""

from __future__ import annotations

import pytest

from sink.journal.ids import attempt_id_for, operation_id_for, require_digest, require_utc_instant

NS = "sha256:" + "1" * 64
KEY = "sha256:" + "2" * 64


def test_operation_id_is_deterministic_and_prefixed() -> None:
    first = operation_id_for(NS, KEY)
    assert first == operation_id_for(NS, KEY)
    assert first.startswith("op_") and len(first) == 43


def test_operation_id_separates_its_inputs() -> None:
    assert operation_id_for(NS, KEY) != operation_id_for(KEY, NS)
    assert operation_id_for("ab", "c") != operation_id_for("a", "bc")


def test_attempt_ids_differ_per_ordinal_and_operation() -> None:
    op = operation_id_for(NS, KEY)
    ids = {attempt_id_for(op, n) for n in range(1, 50)}
    assert len(ids) == 49 and all(i.startswith("at_") for i in ids)
    assert attempt_id_for(op, 1) != attempt_id_for(operation_id_for(KEY, NS), 1)


def test_validators_refuse_malformed_values() -> None:
    with pytest.raises(ValueError):
        require_digest("sha256:" + "A" * 64, "d")
    with pytest.raises(ValueError):
        require_utc_instant("2026-02-30T00:00:00Z", "t")
    require_digest(NS, "d")
    require_utc_instant("2026-02-28T00:00:00Z", "t")


@pytest.mark.parametrize("value", [
    "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-04-31T00:00:00Z",
    "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z", "0000-01-01T00:00:00Z",
    "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00.5Z", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00z",
    "2026-01-01T00:00:00Z\n", "\uff12026-01-01T00:00:00Z",
])
def test_utc_instant_refuses_every_other_calendar_or_shape(value: str) -> None:
    with pytest.raises(ValueError):
        require_utc_instant(value, "t")


@pytest.mark.parametrize("value", ["2024-02-29T23:59:59Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
def test_utc_instant_accepts_real_instants(value: str) -> None:
    require_utc_instant(value, "t")
