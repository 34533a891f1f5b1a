"""Pure checks of the request guards, the RE2 path matcher and the Toxiproxy name/address rules."""

from __future__ import annotations

import time
from typing import Any

import pytest
from starlette.responses import Response

from fault_proxy.api_guards import (
    GuardPolicy,
    Refused,
    admin_header_ok,
    check_headers,
    host_allowlist,
    is_json_media_type,
    parse_json,
)
from fault_proxy.path_regex import PathRegex, PathRegexError
from fault_proxy.strict_json import json_depth
from fault_proxy.tcp.addresses import AddressError, split_host_port
from fault_proxy.tcp.engine import ApiError, check_name


def _render(status: int, kind: str, detail: str) -> Response:
    return Response(detail, status_code=status)


HOSTS = host_allowlist(["127.0.0.1"], 9000)
ADMIN = GuardPolicy(render=_render, allowed_hosts=HOSTS, require_admin_header=True)
TOXI = GuardPolicy(render=_render, allowed_hosts=HOSTS, refuse_browsers=True)


def _scope(method: str = "POST", host: str | None = "127.0.0.1:9000", **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    if host is not None:
        raw.insert(0, (b"host", host.encode("latin-1")))
    return {"type": "http", "method": method, "server": ("127.0.0.1", 9000), "headers": raw}


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
        (_scope(host="localhost:9000"), TOXI, None),
        (_scope(host="LOCALHOST:9000"), TOXI, None),  # host names are case-insensitive
        (_scope(host="[::1]:9000"), TOXI, None),
        (_scope(host="\t127.0.0.1:9000 "), TOXI, None),  # SP/HTAB around a value are not part of it
        (_scope(host="evil.example:9000"), TOXI, 403),
        (_scope(content_length="1048576"), TOXI, None),
        (_scope(content_length="1048577"), TOXI, 413),
        (_scope(content_length="99999999999999999999"), TOXI, 400),
        (_scope(content_length="-1"), TOXI, 400),
    ],
)
def test_check_headers(scope: dict[str, Any], policy: GuardPolicy, status: int | None) -> None:
    assert _refusal(scope, policy) == status


@pytest.mark.parametrize(
    "host",
    [None, "", "127.0.0.1", "localhost", "127.0.0.1:9001", "127.0.0.1.rebind.evil.example:9000",
     "127.0.0.1.rebind.evil.example", "127.1:9000", "127.0.0.2:9000", "0x7f.0.0.1:9000", "localhost.:9000",
     "[::ffff:127.0.0.1]:9000", "[0:0:0:0:0:0:0:1]:9000", "127.0.0.1:9000@evil.example", "evil.example",
     "127.0.0.1:09000", "127.0.0.1:9000\xa0", "localhost:9000.evil.example"],
)
def test_only_allowlisted_host_values_pass_reads_included(host: str | None) -> None:
    assert _refusal(_scope("GET", host=host), TOXI) == 403
    assert _refusal(_scope("GET", host=host), ADMIN) == 403


def test_two_host_headers_are_refused_even_when_both_are_allowed() -> None:
    scope = _scope("GET")
    scope["headers"].append((b"host", b"127.0.0.1:9000"))
    assert _refusal(scope, TOXI) == 403


def test_host_allowlist_holds_the_loopback_literals_and_the_started_name_with_the_own_port() -> None:
    assert host_allowlist(["proxy.lan"], 18091) == frozenset(
        {"127.0.0.1:18091", "[::1]:18091", "localhost:18091", "proxy.lan:18091"})
    assert "[fe80::1]:80" in host_allowlist(["fe80::1"], 80)
    assert "localhost" in host_allowlist([], 80)  # port 80: HTTP clients leave it out
    assert "localhost" not in host_allowlist([], 8080)
    refuse_all = GuardPolicy(render=_render, allowed_hosts=frozenset())
    assert _refusal(_scope("GET"), refuse_all) == 403


@pytest.mark.parametrize(
    ("values", "ok"),
    [([b"1"], True), ([b" 1 "], True), ([b"\t1\t"], True), ([b"1", b"1"], False), ([], False), ([b"01"], False),
     ([b"1,1"], False), ([b"\xa01"], False), ([b"1\x85"], False), ([b"\x0b1"], False), ([b"1\x00"], False),
     ([b"true"], False), ([b" "], False)],
)
def test_admin_header_is_one_header_with_value_1_around_it_only_sp_and_htab(values: list[bytes], ok: bool) -> None:
    assert admin_header_ok(values) is ok


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
     (b"{}", True), (b"{", False), (b"\xff", False), (b"9" * 5000, False),
     (b"[1e308, -1.5e-300, 0]", True), (b"[1e400]", False), (b"[-1e999]", False), (b"[NaN]", False),
     (b"[Infinity]", False), (b"[-Infinity]", False), (b'{"seed": 1e309}', False),
     (b'{"id": "a", "id": "b"}', False), (b'{"id": "a", "ID": "b"}', True), (b'[{"x": {"k": 1, "k": 1}}]', False),
     (b'{"a": {"b": 1}, "c": {"b": 2}}', True)],
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
