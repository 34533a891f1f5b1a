"""The body is streamed: a sender whose address space is capped well below the body size still
sends it whole, with the exact length, to a peer that counts the bytes."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tr_capture import CaptureServer

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

HERE = Path(__file__).resolve().parent
SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    sys.path[:0] = [sys.argv[1], sys.argv[1] + "/../mock_receiver"]
    from tr_support import GeneratedBody, batch_request, timeouts
    from sink.transport import HttpxRestTransport, NoAuth

    url, size, headroom = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    body = GeneratedBody(size)
    with open("/proc/self/status") as status:
        vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    limit = vm + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with HttpxRestTransport(url, NoAuth()) as transport:
        outcome = transport.send(batch_request("k-big", body), timeouts=timeouts(write_ms=9000, read_ms=9000,
                                 idle_ms=9000, request_total_ms=120000, operation_total_ms=120000))
    try:
        bytearray(size)  # proves the cap: the body itself does not fit in this process
        fits = True
    except MemoryError:
        fits = False
    print(json.dumps({"limit": limit, "fits": fits, "certainty": outcome.evidence.certainty.value,
                      "sent": outcome.evidence.request_bytes_to_kernel,
                      "status": outcome.response.status if outcome.response else None}))
    """
)


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_AS"), reason="RLIMIT_AS is not available on this platform")
def test_a_body_larger_than_the_address_space_limit_is_sent_whole() -> None:
    size, headroom = 768 << 20, 256 << 20
    capture = CaptureServer()
    try:
        completed = subprocess.run([sys.executable, "-c", SCRIPT, str(HERE), capture.url, str(size), str(headroom)],
                                   capture_output=True, text=True, timeout=170, check=False)
    finally:
        capture.close()
    assert completed.returncode == 0, completed.stderr[-2000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["fits"] is False
    assert result["limit"] < size + (400 << 20)
    assert result["certainty"] == "response_received" and result["status"] == 200
    assert result["sent"] > size
    (captured,) = capture.requests
    assert captured.body_bytes == size
    assert f"content-length: {size}".encode() in captured.head.lower()
