"""Mutations of a delivery's inputs for the identity conflict matrix (seed: "Canonical identity and
conflict policy"; axis "immutable-intent conflict protection").

Each mutation edits the user's own input files — the source data, the operation profile, the
connection binding — or the process environment (a rotated secret), exactly as a user would, so
the real compiler, sealer and admission compute every identity. Five classes:

* ``payload``: one source row re-read with changed bytes (a value changed, a row dropped);
* ``profile``: the operation's semantics (a static header, a query parameter, the path);
* ``binding``: the remote principal, account or resource namespace;
* ``policy``: timeouts, retry, rate or retention policy only;
* ``secret``: the credential's value rotated (the reference to it unchanged).

The first three change the mutation intent: a reseal of the same boundary must be refused with
``REST_DELIVERY_INTENT_CONFLICT`` before any HTTP. The last two must leave every delivery key,
receiver mutation key and mutation intent identical. A mutation is described by *what* it
changed (class, field, row number), never by the values: no payload row or secret reaches the
artifact.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

INTENT_CHANGING = frozenset({"payload", "profile", "binding"})
IDENTITY_KEEPING = frozenset({"policy", "secret"})
CLASSES = ("payload", "profile", "binding", "policy", "secret")
SECRET_ENV = "MOCK_RECEIVER_TOKEN"  # noqa: S105 - the variable's name, not a secret
WORKLOADS = {"sync_batch": "measurements-sync", "async_bulk_job": "measurements-async"}
PROFILES = {"sync_batch": "mock.json-batches@1", "async_bulk_job": "mock.dataset-jobs@1"}
BINDING = "mock_measurements"
POLICY_FIELDS = (
    ("timeouts", "connect_ms", 100, 10_000), ("timeouts", "read_ms", 1_000, 60_000),
    ("submit_retry", "max_attempts", 1, 5), ("submit_retry", "initial_delay_ms", 100, 5_000),
    ("rate_limits", "submit_per_minute", 1, 600), ("retention", "evidence_retention_days", 30, 365),
)
BINDING_FIELDS = ("remote_principal_id", "remote_account_id", "remote_resource_namespace")
PROFILE_EDITS = ("static_header", "static_query", "path_suffix")
PAYLOAD_EDITS = ("reading", "station_id", "drop_row")


@dataclass(frozen=True, slots=True)
class Mutation:
    """One drawn mutation. ``target`` names what changed; ``amount`` / ``token`` are the drawn
    new content, applied to the files but never written to the artifact."""

    family: str
    kind: str
    target: str
    row: int = 0
    amount: int = 1
    token: str = "x"  # noqa: S105 - a drawn identifier, not a secret

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"family": self.family, "class": self.kind, "target": self.target}
        if self.kind == "payload":
            described["row"] = self.row
        return described


def strategy() -> Any:
    """The Hypothesis strategy of mutations (imported here: only the matrix run needs Hypothesis)."""
    from hypothesis import strategies as st  # noqa: PLC0415

    tokens = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
    family = st.sampled_from(tuple(WORKLOADS))
    amount = st.integers(min_value=1, max_value=9_999_999)

    def build(kind: str, target: str) -> Any:
        return st.builds(Mutation, family=family, kind=st.just(kind), target=st.just(target),
                         row=st.integers(min_value=0, max_value=63), amount=amount, token=tokens)

    targets = {
        "payload": PAYLOAD_EDITS, "profile": PROFILE_EDITS, "binding": BINDING_FIELDS,
        "policy": tuple(f"{section}.{name}" for section, name, _, _ in POLICY_FIELDS), "secret": (SECRET_ENV,),
    }
    return st.one_of(*(build(kind, target) for kind in CLASSES for target in targets[kind]))


def _load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _dump(path: Path, document: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _mutate_rows(path: Path, mutation: Mutation) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    header, body = rows[0], rows[1:]
    index = mutation.row % len(body)
    if mutation.target == "drop_row":
        # Only from a day with another row: an emptied day is a different topology, not a reread.
        day = header.index("business_date")
        shared = [i for i, row in enumerate(body) if sum(other[day] == row[day] for other in body) > 1]
        del body[shared[mutation.row % len(shared)]]
    elif mutation.target == "reading":
        column = header.index("reading")
        milli = round(float(body[index][column]) * 1000) + mutation.amount  # a different value at scale 3
        body[index][column] = f"{milli / 1000:.3f}"
    else:
        column = header.index("station_id")
        body[index][column] = f"{body[index][column]}{mutation.amount}"
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    path.write_text(out.getvalue(), encoding="utf-8")


def apply(mutation: Mutation, scenarios: Path, env: dict[str, str]) -> None:
    """Edit the copy of ``scenarios/`` (and ``env``) in place; the base is never touched."""
    if mutation.kind == "payload":
        _mutate_rows(scenarios / "workloads" / "data" / "measurements.csv", mutation)
    elif mutation.kind == "secret":
        env[SECRET_ENV] = f"rotated-{mutation.token}"
    elif mutation.kind == "binding":
        path = scenarios / "bindings" / f"{BINDING}.yaml"
        document = _load(path)
        document[mutation.target] = f"{document[mutation.target]}-{mutation.token}"
        _dump(path, document)
    else:
        path = scenarios / "profiles" / f"{PROFILES[mutation.family]}.yaml"
        document = _load(path)
        request = document["request"]
        if mutation.target == "static_header":
            request.setdefault("headers", {})[f"X-Batch-Tag-{mutation.token}"] = mutation.token
        elif mutation.target == "static_query":
            request.setdefault("query", {})[f"tag_{mutation.token}"] = mutation.token
        elif mutation.target == "path_suffix":
            request["path"] = f"{request['path']}-{mutation.token}"
        else:
            section, name = mutation.target.split(".")
            low, high = next((lo, hi) for s, n, lo, hi in POLICY_FIELDS if (s, n) == (section, name))
            current = int(document[section][name])
            document[section][name] = low + (current - low + mutation.amount) % (high - low + 1)
            if document[section][name] == current:
                document[section][name] = low if current != low else high
        _dump(path, document)
