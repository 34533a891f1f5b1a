"""The harness's TCP fault proxy service: between one sink's row and the next, bytes a toxic still holds
are cut, never delivered into a later run (a slicer trickling a departed client's request)."""

from __future__ import annotations

import socket
import threading
import time

from certification.tcp_service import tcp_proxy_process

REQUEST = b"POST /x HTTP/1.1\r\n" + b"a" * 400


def _collect(server: socket.socket, received: list[bytes], ended: threading.Event) -> None:
    connection, _ = server.accept()
    with connection:
        connection.settimeout(20)
        while chunk := connection.recv(4096):
            received.append(chunk)
    ended.set()


def test_cutting_connections_stops_a_trickling_request_and_keeps_the_listener() -> None:
    with socket.create_server(("127.0.0.1", 0)) as upstream:
        upstream.settimeout(20)
        received: list[bytes] = []
        ended = threading.Event()
        threading.Thread(target=_collect, args=(upstream, received, ended), daemon=True).start()
        with tcp_proxy_process(upstream.getsockname()[:2], seed=1) as tcp:
            # 16-byte slices 200 ms apart: the 418 bytes would take about 5 s to arrive.
            tcp.add_toxic({"name": "slow", "type": "slicer", "stream": "upstream",
                           "attributes": {"average_size": 16, "size_variation": 0, "delay": 200_000}})
            with socket.create_connection(tcp.listen, timeout=5) as client:
                client.sendall(REQUEST)
            time.sleep(0.5)  # the client has gone; the toxic still holds most of its bytes
            started = time.monotonic()
            tcp.cut_connections()
            assert ended.wait(5), "the upstream connection ends when the proxy cuts it"
            assert time.monotonic() - started < 3
            time.sleep(1.0)  # nothing more arrives after the cut
            delivered = b"".join(received)
            assert 0 < len(delivered) < len(REQUEST) and REQUEST.startswith(delivered)
            tcp.reset()
            # The same listen address still relays: the next run connects where the tap expects.
            with socket.create_connection(tcp.listen, timeout=5):
                pass
