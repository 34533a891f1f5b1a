"""The throwaway-cluster helper: tool failures are reported, start failures reach the policy hook."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.journal.postgres import cluster as cluster_module
from sink.journal.postgres.cluster import Cluster, ClusterSet, ClusterUnavailable

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


def test_jpg_failing_server_tool_raises_cluster_unavailable_with_its_message(
    tmp_path: Path, pg_server_binaries: Path
) -> None:
    bin_dir = pg_server_binaries
    tmp_path.chmod(0o777)  # the tool may run as `postgres`
    broken = Cluster(bin_dir=bin_dir, base_dir=tmp_path, port=1, name="absent", owned_base=False)
    with pytest.raises(ClusterUnavailable, match="pg_ctl failed"):
        broken.run_tool("pg_ctl", "-D", str(tmp_path / "absent"), "status")


def test_jpg_cluster_set_reports_start_failures_to_its_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(settings: object = None) -> Cluster:
        raise ClusterUnavailable("initdb failed (1): simulated")

    monkeypatch.setattr(cluster_module, "start_primary", refuse)
    reasons: list[str] = []
    clusters = ClusterSet(on_unavailable=reasons.append)
    with pytest.raises(ClusterUnavailable):
        clusters.primary()
    assert reasons == ["initdb failed (1): simulated"]
