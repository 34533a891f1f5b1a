"""Kill tests of sink/security/revocation.py (issue 14): the deny list's bounds, the entries an
operator may write by hand, and ``revoke``'s atomic, reviewable write (the file is what an operator
diffs before lifting a revocation, so its bytes are pinned)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from sink.contracts.errors import ExitClass
from sink.security.errors import SecurityRefusal
from sink.security.revocation import RevocationGate, RevocationList, read_revocations, revoke

PROFILE = "sha256:" + "a" * 64
BINDING = "sha256:" + "b" * 64
LIMIT = 4 * 1024 * 1024


def _gate(path: Path) -> RevocationGate:
    return RevocationGate(path, profile_contract_digest=PROFILE, binding_digest=BINDING)


def _refusal(gate: RevocationGate) -> SecurityRefusal:
    with pytest.raises(SecurityRefusal) as raised:
        gate.assert_submit_allowed()
    return raised.value


def test_a_list_with_no_entries_written_by_hand_allows_submits(tmp_path: Path) -> None:
    path = tmp_path / "revocations.yaml"
    path.write_text("schema_id: restproof.revocations.v1\n")
    _gate(path).assert_submit_allowed()
    assert read_revocations(path).revoked == ()


def test_a_reason_is_display_text_of_at_most_200_characters(tmp_path: Path) -> None:
    path = tmp_path / "revocations.yaml"
    revoke(path, "binding", BINDING, "r" * 200)
    assert read_revocations(path).revoked[0].reason == "r" * 200
    assert _refusal(_gate(path)).code == "security.revoked"
    entry = {"kind": "binding", "digest": BINDING, "reason": "r" * 201}
    path.write_text(json.dumps({"schema_id": "restproof.revocations.v1", "revoked": [entry]}))
    invalid = _refusal(_gate(path))  # a list that cannot be read whole refuses everything
    assert invalid.code == "security.revocation_list_invalid" and invalid.exit_class is ExitClass.UNAVAILABLE


def test_a_list_holds_at_most_ten_thousand_entries() -> None:
    entries = [{"kind": "binding", "digest": f"sha256:{index:064x}"} for index in range(10_001)]
    assert len(RevocationList.model_validate({"schema_id": "restproof.revocations.v1",
                                              "revoked": entries[:10_000]}).revoked) == 10_000
    with pytest.raises(ValidationError):
        RevocationList.model_validate({"schema_id": "restproof.revocations.v1", "revoked": entries})


def test_a_list_file_is_bounded_at_4_mib(tmp_path: Path) -> None:
    document = json.dumps({"schema_id": "restproof.revocations.v1",
                           "revoked": [{"kind": "binding", "digest": BINDING}]})
    path = tmp_path / "revocations.yaml"
    path.write_text(document + " " * (LIMIT - len(document)))
    assert path.stat().st_size == LIMIT
    assert _refusal(_gate(path)).code == "security.revoked"
    path.write_text(document + " " * (LIMIT - len(document) + 1))
    assert _refusal(_gate(path)).code == "security.revocation_list_unavailable"


def test_revoke_writes_a_sorted_one_field_per_line_document(tmp_path: Path) -> None:
    path = tmp_path / "revocations.yaml"
    revoke(path, "binding", BINDING, "SEC-1")
    revoke(path, "profile", PROFILE)
    expected = (
        '{\n "revoked": [\n'
        f'  {{\n   "digest": "{BINDING}",\n   "kind": "binding",\n   "reason": "SEC-1"\n  }},\n'
        f'  {{\n   "digest": "{PROFILE}",\n   "kind": "profile"\n  }}\n'
        ' ],\n "schema_id": "restproof.revocations.v1"\n}\n'
    )
    assert path.read_text() == expected
    assert [entry.reason for entry in read_revocations(path).revoked] == ["SEC-1", None]


def test_revoke_writes_beside_the_list_whatever_the_temporary_directory(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The replace is atomic only within one file system: the temporary never goes to $TMPDIR.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temporary-directory"))
    path = tmp_path / "lists" / "revocations.yaml"
    path.parent.mkdir()
    revoke(path, "binding", BINDING)
    assert _refusal(_gate(path)).code == "security.revoked"
    assert sorted(p.name for p in path.parent.iterdir()) == ["revocations.yaml"]


def test_a_failed_replace_raises_and_leaves_the_list_and_no_temporary(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "revocations.yaml"
    revoke(path, "profile", PROFILE)
    before = path.read_bytes()

    def failing_replace(source: object, target: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        revoke(path, "binding", BINDING, "SEC-2")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["revocations.yaml"]
    assert _refusal(_gate(path)).code == "security.revoked"  # the profile revocation still stands
