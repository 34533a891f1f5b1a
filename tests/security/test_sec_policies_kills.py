"""Kill tests of sink/security/policies.py (issue 14): a policy reference finds exactly one file of
the policy directory (never a path outside it), the file is bounded, and every way it can be wrong
is a stable refusal before anything is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.security.errors import SecurityRefusal
from sink.security.policies import PolicyStore

LIMIT = 64 * 1024


def _refusal(action: object) -> SecurityRefusal:
    with pytest.raises(SecurityRefusal) as raised:
        action()  # type: ignore[operator]
    return raised.value


def _write(directory: Path, kind: str, name: str, text: str) -> Path:
    (directory / kind).mkdir(parents=True, exist_ok=True)
    path = directory / kind / f"{name}.yaml"
    path.write_text(text)
    return path


def test_the_built_in_policies_cover_the_whole_loopback_interface() -> None:
    store = PolicyStore(None)
    loopback = store.network("loopback-only@1")
    assert loopback.id == "loopback-only@1"
    assert loopback.allows("127.0.0.1") and loopback.allows("127.255.0.9") and loopback.allows("::1")
    assert not loopback.allows("10.0.0.1") and not loopback.allows("::2")
    assert store.tls("loopback-plaintext@1").id == "loopback-plaintext@1"


def test_the_policy_directory_comes_from_the_environment(tmp_path: Path) -> None:
    _write(tmp_path, "network", "egress@3", "id: egress@3\nallowed_networks: [10.9.0.0/16]\n")
    store = PolicyStore.from_environ({"RESTPROOF_POLICY_DIR": str(tmp_path)})
    assert store.network("egress@3").allows("10.9.1.1")
    unset = PolicyStore.from_environ({"OTHER_POLICY_DIR": str(tmp_path)})
    assert _refusal(lambda: unset.network("egress@3")).code == "transport.network.policy_unknown"


def test_a_reference_with_a_slash_never_reads_a_file(tmp_path: Path) -> None:
    # A reference is a name, not a path: neither a subdirectory nor a way out of the kind's directory.
    _write(tmp_path / "tls", "sub", "inner@1", "id: inner@1\n")
    _write(tmp_path, "network", "egress@1", "id: egress@1\nallowed_networks: [10.0.0.0/8]\n")
    store = PolicyStore(tmp_path)
    for ref in ("sub/inner@1", "../network/egress@1"):
        refused = _refusal(lambda ref=ref: store.tls(ref))
        assert refused.code == "transport.tls.policy_unknown", ref


def test_a_policy_file_is_bounded_at_64_kib(tmp_path: Path) -> None:
    text = "id: padded@1\nallowed_networks: [10.0.0.0/8]\n"
    _write(tmp_path, "network", "padded@1", text + "#" * (LIMIT - len(text) - 1) + "\n")
    _write(tmp_path, "network", "padded@2", text.replace("@1", "@2") + "#" * (LIMIT - len(text)) + "\n")
    store = PolicyStore(tmp_path)
    assert (tmp_path / "network" / "padded@1.yaml").stat().st_size == LIMIT
    assert store.network("padded@1").allows("10.1.1.1")
    too_large = _refusal(lambda: store.network("padded@2"))
    assert too_large.code == "transport.network.policy_invalid" and "bounded YAML" in too_large.detail


def test_an_unparseable_policy_file_is_invalid_not_a_crash(tmp_path: Path) -> None:
    _write(tmp_path, "tls", "broken@1", "id: [unclosed\n")
    refused = _refusal(lambda: PolicyStore(tmp_path).tls("broken@1"))
    assert refused.code == "transport.tls.policy_invalid" and "yaml." in refused.detail


def test_an_invalid_policy_names_the_field_that_is_wrong(tmp_path: Path) -> None:
    _write(tmp_path, "network", "origins@1",
           "id: origins@1\nallowed_networks: [10.0.0.0/8]\ntoken_origins: [[https://login.example]]\n")
    refused = _refusal(lambda: PolicyStore(tmp_path).network("origins@1"))
    assert refused.code == "transport.network.policy_invalid"
    assert "token_origins.0" in refused.detail
