"""Kill tests of sink/transport/dns.py (issue 14): the ``dns_ms`` bound, the literal shortcut, the
answer check and the bound on parked lookups, each through ``BoundedResolver`` or the module's
public functions. Every resolver here is a fake (no real DNS); the only real lookup is of an IP
literal, which getaddrinfo answers without asking anyone."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from sink.transport.dns import BoundedResolver, ResolutionFailed, literal_address, system_resolver

pytestmark = pytest.mark.timeout(30)


class StuckResolver:
    """Blocks every lookup until released (at most ``cap_s``), recording the hosts it was asked."""

    def __init__(self, answer: str = "127.0.0.1", cap_s: float = 2.0) -> None:
        self.asked: list[str] = []
        self.release = threading.Event()
        self._answer = answer
        self._cap_s = cap_s

    def __call__(self, host: str, port: int) -> str:
        self.asked.append(host)
        self.release.wait(self._cap_s)
        return self._answer


@pytest.fixture
def stuck() -> Iterator[StuckResolver]:
    resolver = StuckResolver()
    yield resolver
    resolver.release.set()


def _failure(action: object) -> str:
    with pytest.raises(ResolutionFailed) as raised:
        action()  # type: ignore[operator]
    return raised.value.cause


def test_an_ip_literal_is_its_own_answer_without_a_lookup() -> None:
    asked: list[str] = []

    def recording(host: str, port: int) -> str:
        asked.append(host)
        return "127.0.0.9"

    resolver = BoundedResolver(recording)
    try:
        assert resolver.resolve("[::1]", 443, 1.0) == "::1"
        assert resolver.resolve("127.0.0.1", 443, 1.0) == "127.0.0.1"
        assert asked == []
        assert resolver.resolve("receiver.test", 443, 1.0) == "127.0.0.9"
        assert asked == ["receiver.test"]
    finally:
        resolver.close()
    assert literal_address("[::1]") == "::1" and literal_address("receiver.test") is None
    assert literal_address("X10.0.0.1") is None  # only an IPv6 literal's brackets are removed


def test_an_expired_bound_starts_no_lookup_and_a_short_one_still_resolves() -> None:
    asked: list[str] = []

    def recording(host: str, port: int) -> str:
        asked.append(host)
        return "127.0.0.1"

    resolver = BoundedResolver(recording)
    try:
        assert _failure(lambda: resolver.resolve("receiver.test", 443, 0.0)) == "timeout"
        time.sleep(0.05)  # a lookup started anyway would have reached the resolver by now
        assert asked == []
        # A bound under one second is a bound, not an expired one.
        assert resolver.resolve("receiver.test", 443, 0.5) == "127.0.0.1"
    finally:
        resolver.close()


def test_a_stuck_lookup_fails_at_its_bound(stuck: StuckResolver) -> None:
    resolver = BoundedResolver(stuck)
    try:
        started = time.monotonic()
        assert _failure(lambda: resolver.resolve("receiver.test", 443, 0.1)) == "timeout"
        assert time.monotonic() - started < 1.0
    finally:
        resolver.close()


def test_a_failed_or_non_address_answer_is_an_error() -> None:
    def failing(host: str, port: int) -> str:
        raise socket.gaierror(socket.EAI_NONAME, "unknown name")

    def not_an_address(host: str, port: int) -> str:
        return "elsewhere.test"

    for fake in (failing, not_an_address):
        resolver = BoundedResolver(fake)
        try:
            with pytest.raises(ResolutionFailed) as raised:
                resolver.resolve("receiver.test", 443, 1.0)
            assert raised.value.cause == "error"
        finally:
            resolver.close()


def _parked() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name.startswith("restproof-dns")}


def test_at_most_four_lookups_are_parked_and_close_cancels_the_queued(stuck: StuckResolver) -> None:
    earlier = _parked()
    resolver = BoundedResolver(stuck)
    outcome: list[object] = []

    def fifth() -> None:
        try:
            outcome.append(resolver.resolve("fifth.test", 443, 1.0))
        except BaseException as exc:  # whatever the caller would see; never an answer
            outcome.append(exc)

    waiting = threading.Thread(target=fifth)
    try:
        for index in range(4):
            assert _failure(lambda index=index: resolver.resolve(f"h{index}.test", 443, 0.05)) == "timeout"
        assert len(_parked() - earlier) == 4
        # A fifth lookup finds every worker parked: it waits in the queue, no fifth thread starts.
        waiting.start()
        time.sleep(0.1)
        assert "fifth.test" not in stuck.asked
        started = time.monotonic()
        resolver.close()  # must neither wait for the stuck lookups nor leave the queued one to run
        assert time.monotonic() - started < 0.5
    finally:
        stuck.release.set()
        if waiting.ident is not None:
            waiting.join(5)
    time.sleep(0.1)  # released workers would now run a queued lookup that close did not cancel
    assert sorted(stuck.asked) == ["h0.test", "h1.test", "h2.test", "h3.test"]
    assert len(outcome) == 1 and not isinstance(outcome[0], str)


def test_the_system_resolver_answers_a_literal_and_refuses_an_empty_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert system_resolver("127.0.0.1", 443) == "127.0.0.1"
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: [])
    with pytest.raises(OSError, match="no address"):
        system_resolver("127.0.0.1", 443)
