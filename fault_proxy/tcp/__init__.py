"""Byte-level TCP fault injection behind a Toxiproxy-compatible HTTP API.

Knows nothing of HTTP on the data path: it cuts, delays, slices and resets TCP byte streams, so it
shows what a connection reset (RST) does, which an HTTP-aware proxy that only closes (FIN) cannot.
`launcher.start_toxiproxy` gives a real Toxiproxy server when one is installed, else this one.
"""

from fault_proxy.tcp.launcher import ToxiproxyHandle, ToxiproxyNotFound, find_real_toxiproxy, start_toxiproxy

__all__ = ["ToxiproxyHandle", "ToxiproxyNotFound", "find_real_toxiproxy", "start_toxiproxy"]
