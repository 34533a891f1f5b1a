"""rate_policy's validation names the field it refuses (issue 14): an operator reading a refused
rate-limit configuration sees which identifier was wrong."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sink.journal.rate_policy import BucketSpec, SlotRequest


def test_a_bad_bucket_name_is_named_in_the_refusal() -> None:
    with pytest.raises(ValueError, match=r"^rate bucket must be 1-256 characters"):
        BucketSpec(" spaced", 60, 1)


@pytest.mark.parametrize(("field", "label"), [("scope", "request-slot scope"), ("holder", "request-slot holder")])
def test_a_bad_slot_identifier_is_named_in_the_refusal(field: str, label: str) -> None:
    values = {"scope": "receiver-a", "holder": "worker-1", field: "bad id"}
    with pytest.raises(ValueError, match=rf"^{label} must be 1-256 characters"):
        SlotRequest(values["scope"], values["holder"], 1, timedelta(seconds=5))
    SlotRequest("receiver-a", "worker-1", 1, timedelta(seconds=5))  # the control case
