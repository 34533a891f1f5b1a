"""The grant claim's file and the marker store's publication, rule by rule (issue 14).

The grant claim (``<ordinal>.grant.json``) is the evidence that one critical submit used a
marker: its bytes are pinned like the marker's. Publication faults are injected at the OS calls
the store makes (``os.link``, ``os.fsync``): a failure other than "exists" must surface, never
read as "someone else published it", and a new directory is made durable in its parents.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from test_jn_marker_store_kills import MARKER

from sink.journal.markers import FileMarkerStore, GrantClaim, namespace_key

CLAIM = GrantClaim(
    operation_namespace=MARKER.operation_namespace, operation_id="op_1", attempt_ordinal=1,
    attempt_id=MARKER.attempt_id, marker_digest="sha256:" + "cd" * 32, expected_revision=2,
    journal_epoch=1, lease_owner="w\u00f6rker-1", claimed_at_utc="2026-09-01T00:00:01+00:00",
    grant_nonce="00" * 16,
)

# Canonical JSON: the format label first among sorted keys, no whitespace, ASCII escapes only.
GOLDEN_CLAIM = (
    '{"attempt_id":"' + MARKER.attempt_id + '","attempt_ordinal":1,"claimed_at_utc":"2026-09-01T00:00:01+00:00",'
    '"expected_revision":2,"format":"restproof.may-attempt-grant-claim.v1","grant_nonce":"' + "00" * 16 + '",'
    '"journal_epoch":1,"lease_owner":"w\\u00f6rker-1","marker_digest":"sha256:' + "cd" * 32 + '",'
    '"operation_id":"op_1","operation_namespace":"' + MARKER.operation_namespace + '"}'
).encode()


def _claim_file(store: FileMarkerStore) -> Path:
    return store.root / namespace_key(MARKER.operation_namespace) / "op_1" / "0000000001.grant.json"


def test_the_grant_claim_file_holds_the_pinned_canonical_bytes(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path)
    store.create_if_absent(MARKER)
    assert CLAIM.canonical_bytes() == GOLDEN_CLAIM
    assert store.claim_grant(CLAIM) is True
    assert _claim_file(store).read_bytes() == GOLDEN_CLAIM
    assert store.grant_claimed(MARKER.operation_namespace, "op_1", 1) is True
    assert store.claim_grant(CLAIM) is False, "a second claim of the same marker is never created"


def _link_failing_with(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def link(src: str | os.PathLike[str], dst: str | os.PathLike[str], **_: object) -> None:
        raise OSError(code, os.strerror(code), str(dst))
    monkeypatch.setattr(os, "link", link)


def test_a_full_disk_while_claiming_is_an_error_not_another_grant(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileMarkerStore(tmp_path)
    store.create_if_absent(MARKER)
    _link_failing_with(monkeypatch, errno.ENOSPC)
    with pytest.raises(OSError) as caught:
        store.claim_grant(CLAIM)
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert store.grant_claimed(MARKER.operation_namespace, "op_1", 1) is False
    assert not list(_claim_file(store).parent.glob(".*.tmp")), "the temporary file is removed"


def test_a_full_disk_while_publishing_a_marker_is_that_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileMarkerStore(tmp_path)
    _link_failing_with(monkeypatch, errno.ENOSPC)
    with pytest.raises(OSError) as caught:
        store.create_if_absent(MARKER)
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert store.get(MARKER.operation_namespace, "op_1", 1) is None


def test_exists_without_a_readable_marker_is_never_taken_as_published(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """link says EEXIST but no marker can be read back: the store refuses to answer."""
    store = FileMarkerStore(tmp_path)
    _link_failing_with(monkeypatch, errno.EEXIST)
    with pytest.raises(FileExistsError):
        store.create_if_absent(MARKER)


def _fsynced_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_a_new_operation_directory_is_made_durable_in_its_parents(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileMarkerStore(tmp_path / "markers")
    namespace_dir = store.root / namespace_key(MARKER.operation_namespace)
    op_dir = namespace_dir / "op_1"
    seen = _fsynced_paths(monkeypatch)
    store.create_if_absent(MARKER)
    assert {str(op_dir), str(namespace_dir), str(store.root)} <= set(seen), seen

    seen.clear()
    store.claim_grant(CLAIM)  # its directory exists (and was made durable with the marker)
    assert str(op_dir) in seen and str(namespace_dir) not in seen and str(store.root) not in seen, seen
