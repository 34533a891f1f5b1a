"""The not-sent attestation beside a granted marker (``attest_not_sent`` / ``not_sent_attested``):
pinned canonical bytes bound to the exact grant claim, never written without a claim, and never
believed when it is unreadable, of another format, for another ordinal or for another claim. Also
``scan``'s directory filter and the store creating its root."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from test_jn_grant_claim_kills import CLAIM, GOLDEN_CLAIM
from test_jn_marker_store_kills import MARKER

from sink.journal.markers import FileMarkerStore, namespace_key

NS, OP = MARKER.operation_namespace, "op_1"


def _dir(store: FileMarkerStore) -> Path:
    return store.root / namespace_key(NS) / OP


def _claimed(tmp_path: Path) -> FileMarkerStore:
    store = FileMarkerStore(tmp_path / "markers")
    store.create_if_absent(MARKER)
    assert store.claim_grant(CLAIM) is True
    return store


def test_the_store_creates_its_root_by_default_and_not_when_told(tmp_path: Path) -> None:
    FileMarkerStore(tmp_path / "made")
    assert (tmp_path / "made").is_dir()
    FileMarkerStore(tmp_path / "not-made", create=False)
    assert not (tmp_path / "not-made").exists()


def test_no_attestation_without_a_grant_claim(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path / "markers")
    store.create_if_absent(MARKER)
    assert store.attest_not_sent(NS, OP, 1) is False
    assert not (_dir(store) / "0000000001.not-sent.json").exists()
    assert store.not_sent_attested(NS, OP, 1) is False


def test_the_attestation_holds_pinned_canonical_bytes_bound_to_the_claim(tmp_path: Path) -> None:
    store = _claimed(tmp_path)
    assert store.attest_not_sent(NS, OP, 1) is True
    digest = "sha256:" + hashlib.sha256(GOLDEN_CLAIM).hexdigest()
    golden = ('{"attempt_ordinal":1,"format":"restproof.may-attempt-not-sent.v1","grant_claim_digest":"'
              + digest + '","operation_id":"op_1"}').encode()
    assert (_dir(store) / "0000000001.not-sent.json").read_bytes() == golden
    assert store.not_sent_attested(NS, OP, 1) is True


def _plant(store: FileMarkerStore, raw: bytes) -> None:
    path = _dir(store) / "0000000001.not-sent.json"
    path.unlink(missing_ok=True)
    path.write_bytes(raw)


def test_an_attestation_that_does_not_match_is_never_believed(tmp_path: Path) -> None:
    store = _claimed(tmp_path)
    store.attest_not_sent(NS, OP, 1)
    body = json.loads((_dir(store) / "0000000001.not-sent.json").read_bytes())
    for changed in ({**body, "format": "restproof.may-attempt-not-sent.v2"},
                    {**body, "grant_claim_digest": "sha256:" + "00" * 32},
                    {**body, "attempt_ordinal": 2},
                    {key: value for key, value in body.items() if key != "format"}):
        _plant(store, json.dumps(changed).encode())
        assert store.not_sent_attested(NS, OP, 1) is False, changed
    for raw in (b"[1, 2]", b'"text"', b"{not json", b"\xff\xfe"):
        _plant(store, raw)
        assert store.not_sent_attested(NS, OP, 1) is False, raw  # unreadable: no proof, no error
    _plant(store, json.dumps(body).encode())
    assert store.not_sent_attested(NS, OP, 1) is True


def test_an_attestation_outlives_no_claim(tmp_path: Path) -> None:
    store = _claimed(tmp_path)
    store.attest_not_sent(NS, OP, 1)
    claim = _dir(store) / "0000000001.grant.json"
    os.chmod(claim, 0o644)
    claim.unlink()  # the claim it was bound to is gone: the attestation proves nothing
    assert store.not_sent_attested(NS, OP, 1) is False


def test_scan_ignores_plain_files_and_symlinked_directories(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path / "markers")
    store.create_if_absent(MARKER)
    (store.root / "stray-file").write_text("x")  # a file where namespaces live
    (_dir(store).parent / "stray-op-file").write_text("x")  # a file where operations live
    elsewhere = tmp_path / "elsewhere"
    other = FileMarkerStore(elsewhere)
    other.create_if_absent(MARKER)
    (store.root / "linked-ns").symlink_to(elsewhere / namespace_key(NS), target_is_directory=True)
    (_dir(store).parent / "linked-op").symlink_to(_dir(other), target_is_directory=True)
    found = list(store.scan())
    assert len(found) == 1 and found[0].marker == MARKER


def test_an_attestation_naming_no_claim_is_not_proof_when_no_claim_exists(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path / "markers")
    store.create_if_absent(MARKER)
    body = {"format": "restproof.may-attempt-not-sent.v1", "operation_id": OP, "attempt_ordinal": 1,
            "grant_claim_digest": None}
    _plant(store, json.dumps(body).encode())
    assert store.not_sent_attested(NS, OP, 1) is False
