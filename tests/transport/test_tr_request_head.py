"""The request head the transport builds for httpcore is the one ``httpx.Client`` built before
(sink.transport.request_head): same target bytes, same refusals, same headers in the same order."""

from __future__ import annotations

import random
import subprocess
import sys
from urllib.parse import urlsplit

import httpx
import pytest

from sink.transport.request_head import USER_AGENT, Origin, request_headers, request_target

TARGETS = [
    "/", "/mock/v1/measurements", "/a/b?x=1&y=2", "/p?", "/p?q=a b", "/p?q=%zz", "/p%2Fq", "/p/%41",
    "/p/./q", "/p/../q", "/p/..", "/p/.hidden/x..y", "/p?x=/./", "/p?x=..", "/p#frag", "/p?x#y", "/p q",
    "/p\tq", "/p\x7f", "/ü", "/p?ü", "/p{x}", "/p`", "/p?a<b>", '/p"', "/p?a'b(c)*+,;=:@!$", "/~user/_-.",
    "/" + "a" * 70_000, "/p?" + "b" * 70_000, "relative", "", "//other.example/x", "/p[1]", "/p|q", "/p\\q",
]


def _httpx_target(path_and_query: str) -> bytes | None:
    """What the transport sent before: httpx's URL from the raw path, refused when invalid."""
    try:
        url = httpx.URL(scheme="http", host="example.com", port=8080, raw_path=path_and_query.encode("ascii"))
    except (httpx.InvalidURL, UnicodeEncodeError):
        return None
    return url.raw_path if url.raw_path.startswith(b"/") and not url.fragment else None


@pytest.mark.parametrize("path_and_query", TARGETS)
def test_the_target_is_httpx_own(path_and_query: str) -> None:
    assert request_target(path_and_query) == _httpx_target(path_and_query)


def test_random_targets_match_httpx() -> None:
    alphabet = "/?#%.aZ09-_~!$&'()*+,;=:@ \"<>`{}[]|\\^\t\x00\x7fé"
    rng = random.Random(20261203)
    for _ in range(3000):
        candidate = "/" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert request_target(candidate) == _httpx_target(candidate), candidate


@pytest.mark.parametrize("authority", [
    "http://127.0.0.1:8080", "http://127.0.0.1:80", "https://Example.COM", "https://example.com:443",
    "http://example.com:443", "https://example.com:8443", "http://[::1]:8080", "http://[::1]", "http://bücher.de:81",
])
def test_host_and_headers_match_httpx_client(authority: str) -> None:
    parts = urlsplit(authority)
    assert parts.hostname is not None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    origin = Origin.of(parts.scheme, parts.hostname, port)
    url = httpx.URL(scheme=parts.scheme, host=parts.hostname, port=port, raw_path=b"/x")
    assert (origin.raw_scheme, origin.raw_host, origin.port) == (url.raw_scheme, url.raw_host, url.port)
    given = [("idempotency-key", "k-1"), ("accept-encoding", "identity"), ("content-type", "application/json"),
             ("content-length", "3"), ("authorization", "Bearer abc")]
    with httpx.Client(headers={"user-agent": USER_AGENT}) as client:
        for headers in (given, given[1:2], [("Accept", "application/json"), ("accept-encoding", "identity")]):
            # As the transport sends them: a body always with its length, a bodyless read none.
            with_body = any(name == "content-length" for name, _ in headers)
            built = client.build_request("POST" if with_body else "GET", url, headers=headers,
                                         content=iter([b"abc"]) if with_body else None)
            assert request_headers(origin, headers) == built.headers.raw


def test_a_non_ascii_header_value_raises_as_httpx_did() -> None:
    origin = Origin.of("http", "example.com", 80)
    with pytest.raises(UnicodeEncodeError):
        request_headers(origin, [("authorization", "Bearer é")])


def test_the_transport_does_not_import_httpx() -> None:
    # The transport speaks to httpcore directly; httpx (and its cookie jar, URL parser, status
    # table) is loaded only for a target or an authority its own parser must encode.
    probe = ("import sys, sink.cli, sink.runtime.composition, sink.transport;"
             "from sink.transport.request_head import request_target; request_target('/a?b=1');"
             "print('\\n'.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(done.stdout.split())
    assert "httpcore" in loaded and "sink.transport.httpx_transport" in loaded
    assert "httpx" not in loaded
