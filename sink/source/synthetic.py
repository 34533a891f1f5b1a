"""Seeded synthetic measurements: a variable, optionally skewed volume per business date.

Deterministic: a day's rows depend only on (seed, day), never on the scope, the process or
``PYTHONHASHSEED``, so a window re-read gives the same bytes and large sources are generated on
demand instead of being shipped. The values exercise the codecs: leading zeros, negative and
zero decimals, Cyrillic/Greek/CJK labels, empty labels (null under the bundled mapping),
timestamps with zone offsets, null integers.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Mapping
from datetime import date, timedelta

from sink.contracts.source import SyntheticSource

_LABELS = ("Москва-Север", "Zürich", "東京", "Ελλάδα", "plain", 'quote "x", comma', "", "línea\nnueva")
_OFFSETS = ("Z", "+03:00", "-05:00", "+00:00", "+05:30")
COLUMNS = ["business_date", "station_id", "reading", "label", "valid", "observed_at", "sample_count"]


def _day_random(seed: int, day: date) -> random.Random:
    digest = hashlib.sha256(f"restproof.synthetic.v1:{seed}:{day.isoformat()}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def rows_for_day(spec: SyntheticSource, day: date) -> int:
    rng = _day_random(spec.seed, day)
    count = rng.randint(spec.min_rows_per_day, spec.max_rows_per_day)
    if spec.distribution == "skewed" and rng.random() < 1 / 7:
        count *= spec.heavy_factor
    return count


def day_records(spec: SyntheticSource, day: date) -> Iterator[Mapping[str, object]]:
    count = rows_for_day(spec, day)
    rng = _day_random(spec.seed + 1, day)
    padding = "x" * spec.padding
    for index in range(count):
        milli = rng.randint(-999_999, 9_999_999)
        sign = "-" if milli < 0 else ""
        reading = f"{sign}{abs(milli) // 1000}.{abs(milli) % 1000:03d}"
        seconds = rng.randint(0, 86_399)
        offset = _OFFSETS[index % len(_OFFSETS)]
        label = _LABELS[rng.randrange(len(_LABELS))]
        yield {
            "business_date": day.isoformat(),
            "station_id": f"{rng.randint(0, 99_999):05d}",
            "reading": reading,
            "label": (label + padding) if label else None,
            "valid": "true" if rng.random() < 0.9 else "false",
            "observed_at": f"{day.isoformat()}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
                           f"{offset}",
            "sample_count": None if index % 11 == 0 else str(rng.randint(0, 500)),
        }


class SyntheticSnapshot:
    kind = "synthetic"

    def __init__(self, spec: SyntheticSource, scope_from: date, scope_to: date) -> None:
        self._spec = spec
        self._from = scope_from
        self._to = scope_to

    def columns(self) -> list[str] | None:
        return list(COLUMNS)

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        number = 0
        day = self._from
        while day < self._to:
            for record in day_records(self._spec, day):
                number += 1
                yield number, record
            day += timedelta(days=1)

    def finish(self) -> str:
        return f"synthetic:restproof.synthetic.v1:seed={self._spec.seed}"

    def close(self) -> None:
        return None


class SyntheticSourcePort:
    def __init__(self, spec: SyntheticSource) -> None:
        self._spec = spec

    def open(self, scope_from: date, scope_to: date) -> SyntheticSnapshot:
        return SyntheticSnapshot(self._spec, scope_from, scope_to)
