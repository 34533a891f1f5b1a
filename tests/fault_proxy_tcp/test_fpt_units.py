"""Pure parts of fault_proxy.tcp: slicing, attribute validation, addresses, seeded randomness."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fault_proxy.tcp.addresses import AddressError, join_host_port, split_host_port
from fault_proxy.tcp.engine import ApiError, Proxy, Randomness
from fault_proxy.tcp.registry import ProxyRegistry
from fault_proxy.tcp.toxics import (
    LatencyAttributes,
    Stream,
    ToxicInputError,
    ToxicSpec,
    ToxicType,
    parse_attributes,
    slice_offsets,
)


@given(length=st.integers(0, 5000), average=st.integers(1, 300), data=st.data())
def test_slice_offsets_cover_the_chunk_in_order(length: int, average: int, data: st.DataObject) -> None:
    variation = data.draw(st.integers(0, average - 1))
    cuts = slice_offsets(length, average, variation, random.Random(data.draw(st.integers())))
    assert cuts[0] == 0
    assert cuts[-1] == length
    assert cuts == sorted(cuts)
    sizes = [b - a for a, b in itertools.pairwise(cuts)]
    assert all(size > 0 for size in sizes)
    assert all(size <= average + variation for size in sizes)


def test_slice_offsets_without_variation_are_even() -> None:
    assert slice_offsets(40, 10, 0, random.Random(1)) == [0, 10, 20, 30, 40]


@pytest.mark.parametrize(("toxic_type", "raw", "message"), [
    (ToxicType.LATENCY, {"latency": "100"}, "latency"),
    (ToxicType.LATENCY, {"latency": 1.5}, "latency"),
    (ToxicType.LATENCY, {"latency": -1}, "latency"),
    (ToxicType.SLICER, {"average_size": 0}, "average_size"),
    (ToxicType.SLICER, {"average_size": 10, "size_variation": 10}, "size_variation"),
    (ToxicType.LIMIT_DATA, [1], "JSON object"),
])
def test_bad_attributes_are_rejected_with_the_field_named(toxic_type: ToxicType, raw: object,
                                                          message: str) -> None:
    with pytest.raises(ToxicInputError, match=message):
        parse_attributes(toxic_type, raw)


def test_attributes_default_and_ignore_unknown_fields() -> None:
    parsed = parse_attributes(ToxicType.LATENCY, {"latency": 10, "colour": "red"})
    assert parsed.model_dump() == {"latency": 10, "jitter": 0}


def test_partial_update_keeps_other_attributes() -> None:
    base = parse_attributes(ToxicType.LATENCY, {"latency": 10, "jitter": 2})
    assert parse_attributes(ToxicType.LATENCY, {"jitter": 3}, base=base).model_dump() == {
        "latency": 10, "jitter": 3}


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:8474", ("127.0.0.1", 8474)),
    ("[::1]:80", ("::1", 80)),
    ("localhost:0", ("localhost", 0)),
])
def test_split_host_port(text: str, expected: tuple[str, int]) -> None:
    assert split_host_port(text) == expected


def test_empty_host_means_loopback_not_every_interface() -> None:
    assert split_host_port(":9000", default_host="127.0.0.1") == ("127.0.0.1", 9000)


@pytest.mark.parametrize("text", ["8474", "host:", "host:http", ":80", "h:70000"])
def test_bad_addresses_are_rejected(text: str) -> None:
    with pytest.raises(AddressError):
        split_host_port(text)


def test_join_host_port_brackets_ipv6() -> None:
    assert join_host_port("::1", 5) == "[::1]:5"
    assert join_host_port("127.0.0.1", 5) == "127.0.0.1:5"


def _spec(name: str = "t", generation: int = 0) -> ToxicSpec:
    return ToxicSpec(name=name, type=ToxicType.LATENCY, stream=Stream.DOWNSTREAM, toxicity=0.5,
                     attributes=LatencyAttributes(), generation=generation)


def test_seeded_randomness_depends_only_on_its_key() -> None:
    one, two = Randomness(3), Randomness(3)
    draws = [one.for_toxic("p", _spec(), n).random() for n in range(5)]
    assert draws == [two.for_toxic("p", _spec(), n).random() for n in range(5)]
    assert len(set(draws)) == 5  # each connection gets its own draw
    assert Randomness(4).for_toxic("p", _spec(), 0).random() != draws[0]
    assert one.for_toxic("p", _spec("other"), 0).random() != draws[0]
    assert one.for_toxic("p", _spec(generation=1), 0).random() != draws[0]


def test_unseeded_randomness_differs_between_servers() -> None:
    draws = {Randomness(None).for_toxic("p", _spec(), 0).random() for _ in range(5)}
    assert len(draws) == 5


def test_toxicity_outside_zero_to_one_is_rejected() -> None:
    proxy = Proxy("p", "127.0.0.1:0", "127.0.0.1:1", Randomness(None))
    for bad in (1.5, -0.1, "1", True):
        with pytest.raises(ApiError) as caught:
            proxy.add_toxic({"type": "latency", "toxicity": bad})
        assert caught.value.status == 400
    assert proxy.toxics == []


def test_populate_validates_everything_before_changing_anything() -> None:
    async def scenario() -> tuple[int, list[str]]:
        registry = ProxyRegistry()
        good = {"name": "a", "upstream": "127.0.0.1:1", "enabled": False}
        with pytest.raises(ApiError) as caught:
            await registry.populate([good, {"name": "b", "upstream": "no-port"}])
        with pytest.raises(ApiError):
            await registry.populate([good, good])  # duplicate names in one request
        return caught.value.status, list(registry.proxies)

    status, names = asyncio.run(scenario())
    assert status == 400
    assert names == []
