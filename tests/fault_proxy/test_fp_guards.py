"""Pure checks of the request guards, the RE2 path matcher and the Toxiproxy name/address rules."""

from __future__ import annotations

import time
from typing import Any

import pytest
from starlette.responses import Response

from fault_proxy.api_guards import (
    GuardPolicy,
    Refused,
    check_headers,
    is_json_media_type,
    json_depth,
    parse_json,
)
from fault_proxy.path_regex import PathRegex, PathRegexError
from fault_proxy.tcp.addresses import AddressError, split_host_port
from fault_proxy.tcp.engine import ApiError, check_name


def _render(status: int, kind: str, detail: str) -> Response:
    return Response(detail, status_code=status)


ADMIN = GuardPolicy(render=_render, require_admin_header=True)
TOXI = GuardPolicy(render=_render, refuse_browsers=True)


def _scope(method: str = "POST", server: tuple[str, int] = ("127.0.0.1", 9000), **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    return {"type": "http", "method": method, "server": server, "headers": raw}


def _refusal(scope: dict[str, Any], policy: GuardPolicy) -> int | None:
    try:
        check_headers(scope, policy)
    except Refused as refused:
        return refused.status
    return None


@pytest.mark.parametrize(
    ("scope", "policy", "status"),
    [
        (_scope(x_restproof_admin="1"), ADMIN, None),
        (_scope(), ADMIN, 403),
        (_scope(x_restproof_admin="yes"), ADMIN, 403),
        (_scope("GET"), ADMIN, None),  # reads need no admin header
        (_scope("DELETE"), ADMIN, 403),
        (_scope(), TOXI, None),  # the Toxiproxy API asks for no admin header
        (_scope(user_agent="Mozilla/5.0 (X11)"), TOXI, 403),
        (_scope(user_agent="Mozilla/5.0 (X11)", x_restproof_admin="1"), ADMIN, None),
        (_scope(user_agent="python-requests/2.32"), TOXI, None),
        (_scope(origin="http://127.0.0.1:9000"), TOXI, None),
        (_scope(origin="http://localhost:9000"), TOXI, None),
        (_scope(origin="http://127.0.0.1:9001"), TOXI, 403),  # another local port is another origin
        (_scope(origin="http://evil.example"), TOXI, 403),
        (_scope(origin="null"), TOXI, 403),
        (_scope(host="127.0.0.1:9000"), TOXI, None),
        (_scope(host="localhost"), TOXI, None),
        (_scope(host="[::1]:9000"), TOXI, None),
        (_scope(host="evil.example:9000"), TOXI, 403),
        (_scope(server=("0.0.0.0", 9000), host="proxy.lan:9000"), TOXI, None),  # not loopback: any Host
        (_scope(content_length="1048576"), TOXI, None),
        (_scope(content_length="1048577"), TOXI, 413),
        (_scope(content_length="99999999999999999999"), TOXI, 400),
        (_scope(content_length="-1"), TOXI, 400),
    ],
)
def test_check_headers(scope: dict[str, Any], policy: GuardPolicy, status: int | None) -> None:
    assert _refusal(scope, policy) == status


def test_json_depth_counts_containers_without_recursion() -> None:
    assert json_depth(1) == 0
    assert json_depth({"a": [1, {"b": []}]}) == 4  # dict, list, dict, list
    deep: Any = []
    for _ in range(50_000):
        deep = [deep]
    assert json_depth(deep) == 50_001


@pytest.mark.parametrize(
    ("raw", "ok"),
    [(b"[" * 32 + b"]" * 32, True), (b"[" * 33 + b"]" * 33, False), (b"[" * 100_000, False),
     (b"{}", True), (b"{", False), (b"\xff", False), (b"9" * 5000, False)],
)
def test_parse_json_bounds(raw: bytes, ok: bool) -> None:
    if ok:
        parse_json(raw)
    else:
        with pytest.raises(Refused) as info:
            parse_json(raw)
        assert info.value.status == 400


@pytest.mark.parametrize(
    ("content_type", "ok"),
    [("application/json", True), ("Application/JSON; charset=utf-8", True), ("application/problem+json", True),
     ("text/plain", False), ("application/x-www-form-urlencoded", False), ("", False), ("text/json", False)],
)
def test_json_media_types(content_type: str, ok: bool) -> None:
    assert is_json_media_type(content_type) is ok


def test_path_regex_is_linear_on_catastrophic_patterns() -> None:
    regex = PathRegex("/(a+)+b")
    started = time.monotonic()
    assert regex.fullmatch("/" + "a" * 100_000) is False
    assert time.monotonic() - started < 1.0  # Python's re would need ~2**100000 steps
    assert regex.fullmatch("/aab") is True
    assert PathRegex(r"/jobs/\d+").fullmatch("/jobs/42/x") is False  # whole-path match


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "(", "a{1001}", "\ud800"])
def test_path_regex_refuses_what_re2_cannot_run_linearly(pattern: str) -> None:
    with pytest.raises(PathRegexError):
        PathRegex(pattern)


def test_path_regex_matches_paths_with_undecodable_bytes() -> None:
    assert PathRegex("/x.*").fullmatch("/x\udcff") is True


@pytest.mark.parametrize("name", ["a/b", "a?b", "a b", "%2F", ".", "..", "", "x" * 129, "n\u00e9", 7, None])
def test_toxiproxy_names_must_stay_one_unencoded_path_segment(name: object) -> None:
    with pytest.raises(ApiError) as info:
        check_name(name, "proxy name")
    assert info.value.status == 400


@pytest.mark.parametrize("name", ["redis", "db_primary-1", "a.b", "host:6379", "~x", "x" * 128])
def test_toxiproxy_names_accepted(name: str) -> None:
    assert check_name(name, "proxy name") == name


@pytest.mark.parametrize(
    "address", ["127.0.0.1:" + "9" * 5000, "127.0.0.1:99999", "\ud800:80", "ex ample:80", "h\u00e9st:80",
                "[zz::1]:80", "127.0.0.1:\u0661", "x" * 301 + ":80", "127.0.0.1:"],
)
def test_hostile_addresses_are_refused_without_echo(address: str) -> None:
    with pytest.raises(AddressError) as info:
        split_host_port(address)
    assert address not in str(info.value)
