"""The journal locator is the only thing besides an operation id that a trigger stores: anything
that could hold a secret is refused with a stable code, and the stored form round-trips."""

from __future__ import annotations

import json

import pytest

from sink.airflow.locator import JournalLocator, LocatorError

GOOD = {"journal": "postgresql://delivery@db.internal:5432/journal?sslmode=verify-full&connect_timeout=10",
        "artifacts": "/srv/restproof/artifacts", "markers": "/srv/restproof/markers", "pg_schema": "restproof_journal"}


def test_round_trip_through_json() -> None:
    locator = JournalLocator.from_kwargs(GOOD)
    assert JournalLocator.from_kwargs(json.loads(json.dumps(locator.as_kwargs()))) == locator
    assert locator.kind == "postgresql"
    assert JournalLocator.from_kwargs({**GOOD, "journal": "sqlite:/srv/j.sqlite3"}).kind == "sqlite"


@pytest.mark.parametrize(("journal", "code"), [
    ("postgresql://delivery:hunter2@db:5432/journal", "airflow.locator.secret_in_dsn"),
    ("postgresql://delivery:@db:5432/journal", "airflow.locator.secret_in_dsn"),
    ("postgresql://delivery@db/journal?password=hunter2", "airflow.locator.secret_in_dsn"),
    ("postgresql://delivery@db/journal?sslpassword=hunter2", "airflow.locator.secret_in_dsn"),
    ("postgresql://delivery@db/journal?PassWord=hunter2", "airflow.locator.secret_in_dsn"),
    ("postgresql://delivery@db/journal?options=-c%20x%3Dy", "airflow.locator.unknown_field"),
    ("postgresql:///journal", "airflow.locator.invalid"),
    ("postgresql://db:99999/journal", "airflow.locator.invalid"),
    ("mysql://db/journal", "airflow.locator.invalid"),
    ("sqlite:relative/journal.sqlite3", "airflow.locator.invalid"),
    ("sqlite:/srv/j\n.sqlite3", "airflow.locator.invalid"),
])
def test_refused_journals(journal: str, code: str) -> None:
    with pytest.raises(LocatorError) as caught:
        JournalLocator.from_kwargs({**GOOD, "journal": journal})
    assert caught.value.code == code
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize("change", [
    {"artifacts": "relative/artifacts"}, {"markers": ""}, {"pg_schema": "Robert'); DROP"}, {"pg_schema": "a" * 64},
    {"artifacts": "/x" * 600},
])
def test_refused_fields(change: dict[str, str]) -> None:
    with pytest.raises(LocatorError):
        JournalLocator.from_kwargs({**GOOD, **change})


@pytest.mark.parametrize("value", [None, [], "postgresql://db/j", {**GOOD, "token": "x"}, {**GOOD, "markers": 3},
                                   {"journal": GOOD["journal"], "artifacts": GOOD["artifacts"]}])
def test_refused_shapes(value: object) -> None:
    with pytest.raises(LocatorError):
        JournalLocator.from_kwargs(value)
