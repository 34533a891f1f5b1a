"""The toy sink on a row of restproof's catalog, judged by the same history and checkers as
`certify run`: the services of the row's catalog start once per session (per xdist worker)."""

from pathlib import Path

SINK = Path(__file__).resolve().parents[1] / "sinks" / "toy-sink.yaml"


def test_commit_then_cut_applies_every_day_once(restproof_matrix):
    report = restproof_matrix.run(SINK, "sync.cut.after_commit")  # the receiver commits, its answer is cut

    assert report.history.fault.fired, report.describe()
    assert set(report.effects_per_day().values()) == {1}  # exactly one effect for every day of the scope
    assert report.check("unproved_resends").status == "valid"  # every resend carried its batch's key
    assert report.passed, report.describe()
