"""Toxic definitions: the JSON shape of each toxic and its per-connection behaviour.

A toxic is configured once per proxy (`ToxicSpec`) and instantiated once per connection
(`ToxicRuntime`), exactly like Toxiproxy's ToxicWrapper/ToxicStub split. The runtime decides at
creation whether it is active (the `toxicity` draw) and then transforms the chunks of one direction.

Each runtime's `handle` is an async generator: it yields the chunks to pass on and may sleep
between yields. The engine writes a yielded chunk to the socket before resuming the generator,
so a slicer's delay really separates two writes instead of being coalesced.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class Stream(StrEnum):
    """Direction of a toxic, named as Toxiproxy names it."""

    UPSTREAM = "upstream"  # client -> upstream server
    DOWNSTREAM = "downstream"  # upstream server -> client


class ToxicType(StrEnum):
    LATENCY = "latency"
    BANDWIDTH = "bandwidth"
    SLOW_CLOSE = "slow_close"
    TIMEOUT = "timeout"
    RESET_PEER = "reset_peer"
    SLICER = "slicer"
    LIMIT_DATA = "limit_data"


INT64_MAX = 2**63 - 1  # Toxiproxy's attributes are Go int64: larger values are refused there too


class _Attributes(BaseModel):
    # Unknown attributes are ignored (Toxiproxy's JSON decoder does the same); values are strict
    # integers because Toxiproxy rejects "100" or 1.5 for an int64 field.
    model_config = ConfigDict(extra="ignore", strict=True, validate_assignment=True)


class LatencyAttributes(_Attributes):
    latency: int = Field(0, ge=0, le=INT64_MAX, description="milliseconds added to every chunk")
    jitter: int = Field(0, ge=0, le=INT64_MAX, description="+/- milliseconds, uniformly drawn per chunk")


class BandwidthAttributes(_Attributes):
    rate: int = Field(0, ge=0, le=INT64_MAX, description="KB/s (1 KB = 1000 bytes); 0 means unlimited")


class SlowCloseAttributes(_Attributes):
    delay: int = Field(0, ge=0, le=INT64_MAX, description="milliseconds to hold the close back")


class TimeoutAttributes(_Attributes):
    timeout: int = Field(0, ge=0, le=INT64_MAX, description="milliseconds before closing; 0 holds forever")


class ResetPeerAttributes(_Attributes):
    timeout: int = Field(0, ge=0, le=INT64_MAX, description="milliseconds after the first data before the RST")


class SlicerAttributes(_Attributes):
    average_size: int = Field(1, ge=1, le=INT64_MAX, description="average slice size in bytes")
    size_variation: int = Field(0, ge=0, le=INT64_MAX, description="+/- bytes around the average")
    delay: int = Field(0, ge=0, le=INT64_MAX, description="microseconds between slices")

    @model_validator(mode="after")
    def _variation_below_average(self) -> SlicerAttributes:
        if self.size_variation >= self.average_size and self.size_variation > 0:
            raise ValueError("size_variation must be smaller than average_size")
        return self


class LimitDataAttributes(_Attributes):
    bytes: int = Field(0, ge=0, le=INT64_MAX, description="bytes passed in this direction before closing")


ATTRIBUTE_MODELS: dict[ToxicType, type[_Attributes]] = {
    ToxicType.LATENCY: LatencyAttributes,
    ToxicType.BANDWIDTH: BandwidthAttributes,
    ToxicType.SLOW_CLOSE: SlowCloseAttributes,
    ToxicType.TIMEOUT: TimeoutAttributes,
    ToxicType.RESET_PEER: ResetPeerAttributes,
    ToxicType.SLICER: SlicerAttributes,
    ToxicType.LIMIT_DATA: LimitDataAttributes,
}


class ToxicInputError(ValueError):
    """A toxic definition that cannot be accepted (HTTP 400)."""


def parse_attributes(toxic_type: ToxicType, raw: Any, base: _Attributes | None = None) -> _Attributes:
    """Validate `raw` attributes for `toxic_type`, on top of `base` for a partial update."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ToxicInputError("attributes must be a JSON object")
    merged = {**(base.model_dump() if base is not None else {}), **raw}
    try:
        return ATTRIBUTE_MODELS[toxic_type].model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'attributes'}: {err['msg']}" for err in exc.errors()
        )
        raise ToxicInputError(f"invalid attributes for {toxic_type.value}: {problems}") from None


@dataclass
class ToxicSpec:
    """A toxic as configured on a proxy; mutable through the update endpoint."""

    name: str
    type: ToxicType
    stream: Stream
    toxicity: float
    attributes: _Attributes
    # Bumped on every update so live connections notice and redraw their toxicity.
    generation: int = 0

    def to_json(self) -> dict[str, Any]:
        # Field order and names follow Toxiproxy's ToxicWrapper JSON.
        return {
            "attributes": self.attributes.model_dump(),
            "name": self.name,
            "type": self.type.value,
            "stream": self.stream.value,
            "toxicity": self.toxicity,
        }


class CloseConnection(Exception):
    """Raised by a toxic to end the whole connection; `reset` selects RST over FIN."""

    def __init__(self, *, reset: bool, reason: str) -> None:
        super().__init__(reason)
        self.reset = reset
        self.reason = reason


@dataclass
class Chunk:
    data: bytes
    # Monotonic time at which the proxy read the bytes; latency is measured from here.
    timestamp: float


def slice_offsets(length: int, average: int, variation: int, rng: random.Random) -> list[int]:
    """Cut points for the slicer, same recursive halving as Toxiproxy's SlicerToxic.chunk."""
    cuts = [0]

    def split(start: int, end: int) -> None:
        if (end - start) - average <= variation:
            cuts.append(end)
            return
        jitter = rng.randint(-variation, variation - 1) if variation > 0 else 0
        mid = start + (end - start) // 2 + jitter
        split(start, mid)
        split(mid, end)

    if length > 0:
        split(0, length)
    return cuts


@dataclass
class ToxicRuntime:
    """One toxic applied to one connection in one direction."""

    spec: ToxicSpec
    rng: random.Random
    active: bool
    generation: int
    transmitted: int = 0  # limit_data state, kept across updates like Toxiproxy's stub state
    bandwidth_debt: float = 0.0  # seconds the bandwidth toxic is behind schedule
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    async def handle(self, chunk: Chunk) -> AsyncGenerator[Chunk, None]:
        if not self.active:
            yield chunk
            return
        kind = self.spec.type
        attrs = self.spec.attributes
        if isinstance(attrs, LatencyAttributes):
            delay = attrs.latency + (self.rng.randint(-attrs.jitter, attrs.jitter - 1) if attrs.jitter else 0)
            await _sleep_until(chunk.timestamp + delay / 1000.0)
            chunk.timestamp = max(chunk.timestamp, time.monotonic())
            yield chunk
        elif isinstance(attrs, BandwidthAttributes):
            async for piece in self._bandwidth(chunk, attrs.rate):
                yield piece
        elif isinstance(attrs, SlicerAttributes):
            cuts = slice_offsets(len(chunk.data), attrs.average_size, attrs.size_variation, self.rng)
            for start, end in itertools.pairwise(cuts):
                yield Chunk(chunk.data[start:end], chunk.timestamp)
                if attrs.delay:
                    await asyncio.sleep(attrs.delay / 1_000_000.0)
        elif isinstance(attrs, LimitDataAttributes):
            remaining = max(attrs.bytes - self.transmitted, 0)
            if remaining:
                kept = chunk.data[:remaining]
                self.transmitted += len(kept)
                yield Chunk(kept, chunk.timestamp)
            if self.transmitted >= attrs.bytes:
                raise CloseConnection(reset=False, reason="limit_data reached")
        elif isinstance(attrs, ResetPeerAttributes):
            # Toxiproxy waits for the first data in this direction, drops it, then resets.
            await asyncio.sleep(attrs.timeout / 1000.0)
            raise CloseConnection(reset=True, reason="reset_peer")
        elif kind is ToxicType.TIMEOUT:
            return  # data is dropped; the close (if any) comes from the connection timer
        else:  # slow_close acts on close only
            yield chunk

    async def _bandwidth(self, chunk: Chunk, rate: int) -> AsyncIterator[Chunk]:
        if rate <= 0:
            yield chunk
            return
        per_second = rate * 1000
        data = chunk.data
        # Large chunks go out in 100 ms slices so a slow rate is visible as a trickle.
        step = max(per_second // 10, 1)
        while data:
            piece, data = data[:step], data[step:]
            self.bandwidth_debt += len(piece) / per_second
            started = time.monotonic()
            await asyncio.sleep(max(self.bandwidth_debt, 0.0))
            self.bandwidth_debt -= time.monotonic() - started
            yield Chunk(piece, chunk.timestamp)

    async def on_source_closed(self) -> None:
        """Run when the source half of this direction ended normally (EOF)."""
        if not self.active:
            return
        attrs = self.spec.attributes
        if isinstance(attrs, SlowCloseAttributes):
            await asyncio.sleep(attrs.delay / 1000.0)
        elif isinstance(attrs, ResetPeerAttributes):
            # A closed input channel also wakes Toxiproxy's reset toxic.
            await asyncio.sleep(attrs.timeout / 1000.0)
            raise CloseConnection(reset=True, reason="reset_peer")


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)
