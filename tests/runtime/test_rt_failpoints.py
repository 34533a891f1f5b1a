"""failpoints: one enumerable list; RESTPROOF_FAILPOINT arms names, refuses unknown ones, and an
armed point SIGKILLs the process exactly there (checked in a real subprocess)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from sink.runtime.failpoints import (
    ACTION_ENV_VAR,
    ALL_FAILPOINTS,
    DISARMED,
    ENV_VAR,
    JOURNAL_WRITES,
    PREPARATION_POINTS,
    REQUEST_BOUNDARIES,
    REQUEST_KINDS,
    FailpointConfigError,
    Failpoints,
    journal_point,
    parse_action,
    parse_failpoints,
    request_point,
)

SCRIPT = textwrap.dedent("""
    import os, sys
    from sink.runtime.failpoints import Failpoints
    points = Failpoints.from_environ(os.environ)
    for name in sys.argv[1:]:
        print("before " + name, flush=True)
        points.hit(name)
        print("after " + name, flush=True)
""")


def _run(armed: str | None, *names: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, ACTION_ENV_VAR)}
    if armed is not None:
        env[ENV_VAR] = armed
    return subprocess.run([sys.executable, "-c", SCRIPT, *names], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_list_covers_every_journal_write_and_request_boundary() -> None:
    assert len(ALL_FAILPOINTS) == len(set(ALL_FAILPOINTS)) == len(PREPARATION_POINTS) + 2 * len(JOURNAL_WRITES) + 18
    assert set(PREPARATION_POINTS) <= set(ALL_FAILPOINTS)  # freeze/seal/admit points are armed by the same list
    for write in JOURNAL_WRITES:
        assert f"journal.{write}.before" in ALL_FAILPOINTS
        assert f"journal.{write}.after" in ALL_FAILPOINTS
    for kind in REQUEST_KINDS:
        names = [f"http.{kind}.{boundary}" for boundary in REQUEST_BOUNDARIES]
        assert [n for n in ALL_FAILPOINTS if n.startswith(f"http.{kind}.")] == names
    assert REQUEST_BOUNDARIES == ("before_send", "after_headers_sent", "after_body_sent", "after_response_headers",
                                  "after_response_body", "before_record_result")
    assert {"reserve_submitting", "record_submit_result", "record_observation", "record_verification",
            "promote_frontier", "publish_marker"} <= set(JOURNAL_WRITES)


def test_point_builders_refuse_unlisted_parts() -> None:
    assert journal_point("reserve_submitting", "before") == "journal.reserve_submitting.before"
    assert journal_point("promote_frontier", "after") == "journal.promote_frontier.after"
    assert request_point("submit", "after_body_sent") == "http.submit.after_body_sent"
    for bad in (("reserve_submitting", "during"), ("nope", "before")):
        with pytest.raises(ValueError, match="no journal failpoint"):
            journal_point(*bad)
    for bad in (("submit", "midway"), ("delete", "before_send")):
        with pytest.raises(ValueError, match="no request failpoint"):
            request_point(*bad)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_unset_or_empty_arms_nothing(value: str | None) -> None:
    assert parse_failpoints(value) == frozenset()


def test_names_are_parsed_and_trimmed() -> None:
    assert parse_failpoints(" http.submit.after_body_sent , journal.reserve_submitting.after") == {
        "http.submit.after_body_sent", "journal.reserve_submitting.after"}


@pytest.mark.parametrize("value", ["http.submit.after_body_sent,nope", "journal.reserve_submitting",
                                   "HTTP.SUBMIT.BEFORE_SEND"])
def test_unknown_names_are_refused_by_name(value: str) -> None:
    with pytest.raises(FailpointConfigError, match="unknown failpoint") as raised:
        parse_failpoints(value)
    bad = value.rsplit(",", maxsplit=1)[-1]
    assert bad in str(raised.value)
    assert ENV_VAR in str(raised.value) and "ALL_FAILPOINTS" in str(raised.value)


@pytest.mark.parametrize("value", ["x" * 81, "SENTINEL-token secret", "Bearer abc/def"])
def test_names_that_are_not_failpoint_like_are_not_echoed(value: str) -> None:
    with pytest.raises(FailpointConfigError) as raised:
        parse_failpoints(value)
    assert value not in str(raised.value)
    assert "(not a failpoint-like name)" in str(raised.value)
    with pytest.raises(FailpointConfigError) as constructed:
        Failpoints([value])
    assert value not in str(constructed.value)


def test_eighty_character_names_are_echoed() -> None:
    with pytest.raises(FailpointConfigError) as raised:
        parse_failpoints("x" * 80)
    assert "x" * 80 in str(raised.value)


@pytest.mark.parametrize("value", ["http.submit.before_send,", ",", "a,,b"])
def test_empty_items_are_refused(value: str) -> None:
    with pytest.raises(FailpointConfigError, match="empty item"):
        parse_failpoints(value)


def test_constructor_refuses_unknown_names() -> None:
    with pytest.raises(FailpointConfigError, match="bogus"):
        Failpoints(["bogus"])


def test_hit_kills_only_at_armed_points() -> None:
    killed: list[str] = []
    points = Failpoints(["http.poll.before_send"], kill=killed.append)
    assert points.armed == {"http.poll.before_send"}
    points.hit("http.submit.before_send")
    assert killed == []
    points.hit("http.poll.before_send")
    assert killed == ["http.poll.before_send"]


def test_an_armed_point_acts_the_first_time_it_is_reached_only() -> None:
    # A stopped worker is woken once; a second stop at the same point (an async run releases two
    # leases) would leave it frozen until the harness's time limit.
    acted: list[str] = []
    points = Failpoints(["journal.release_lease.after", "http.poll.before_send"], kill=acted.append)
    points.hit("journal.release_lease.after")
    points.hit("journal.release_lease.after")
    assert acted == ["journal.release_lease.after"]
    assert points.armed == {"http.poll.before_send"}  # the other point stays armed
    points.hit("http.poll.before_send")
    assert acted == ["journal.release_lease.after", "http.poll.before_send"]


def test_armed_process_refuses_hits_of_unlisted_points() -> None:
    points = Failpoints(["http.poll.before_send"], kill=lambda name: None)
    with pytest.raises(ValueError, match=r"unlisted failpoint http\.poll\.typo"):
        points.hit("http.poll.typo")


def test_disarmed_hit_is_a_no_op_even_for_unknown_names() -> None:
    DISARMED.hit("anything")
    assert DISARMED.armed == frozenset()
    assert Failpoints.from_environ({}).armed == frozenset()
    assert Failpoints.from_environ({ENV_VAR: "http.summary.after_response_body"}).armed == {
        "http.summary.after_response_body"}


def test_armed_point_sigkills_the_process_exactly_there() -> None:
    target = "journal.reserve_submitting.after"
    result = _run(target, "http.submit.before_send", target, "http.submit.after_body_sent")
    assert result.returncode == -signal.SIGKILL
    assert result.stdout.splitlines() == ["before http.submit.before_send", "after http.submit.before_send",
                                          f"before {target}"]
    assert f"restproof failpoint {target}: SIGKILL" in result.stderr


def test_unarmed_process_runs_through_every_point() -> None:
    result = _run("http.poll.before_send", *ALL_FAILPOINTS[:3])
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("after ") == 3


def test_unknown_name_fails_at_startup_in_the_process() -> None:
    result = _run("journal.nope.before", "http.submit.before_send")
    assert result.returncode == 1
    assert "FailpointConfigError" in result.stderr and "journal.nope.before" in result.stderr
    assert "before " not in result.stdout


def test_at_most_five_unknown_names_are_listed() -> None:
    names = [f"bad.{n}" for n in range(6)]
    with pytest.raises(FailpointConfigError) as parsed:
        parse_failpoints(",".join(names))
    assert "6 unknown failpoint(s): bad.0, bad.1, bad.2, bad.3, bad.4;" in str(parsed.value)
    assert "bad.5" not in str(parsed.value)
    with pytest.raises(FailpointConfigError) as constructed:
        Failpoints(names)
    assert str(constructed.value) == "unknown failpoint(s): bad.0, bad.1, bad.2, bad.3, bad.4"


def test_stop_action_freezes_the_process_exactly_there_until_sigcont() -> None:
    target = "journal.record_submit_result.before"
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env.update({ENV_VAR: target, ACTION_ENV_VAR: "stop"})
    # the target is reached twice: frozen and woken once, the second time it goes through
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, "http.submit.before_send", target, target], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        status = os.waitid(os.P_PID, process.pid, os.WSTOPPED)  # blocks until the point freezes it
        assert status is not None and status.si_code == os.CLD_STOPPED
        os.kill(process.pid, signal.SIGCONT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0  # it went on where it stopped
    assert out.splitlines() == ["before http.submit.before_send", "after http.submit.before_send",
                                f"before {target}", f"after {target}", f"before {target}", f"after {target}"]
    assert err.count("restproof failpoint") == 1
    assert f"restproof failpoint {target}: SIGSTOP" in err


@pytest.mark.parametrize("value", [None, "", " kill "])
def test_kill_is_the_default_action(value: str | None) -> None:
    assert parse_action(value) is parse_action("kill")
    assert parse_action("stop") is not parse_action("kill")


@pytest.mark.parametrize("value", ["pause", "STOP", "kill,stop"])
def test_unknown_actions_are_refused(value: str) -> None:
    with pytest.raises(FailpointConfigError, match=ACTION_ENV_VAR):
        parse_action(value)
    with pytest.raises(FailpointConfigError):
        Failpoints.from_environ({ENV_VAR: "journal.acquire_lease.before", ACTION_ENV_VAR: value})
