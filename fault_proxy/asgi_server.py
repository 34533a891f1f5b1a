"""uvicorn without its own signal handling, shared by both API servers.

uvicorn's ``Server.capture_signals`` re-raises a captured SIGTERM after shutting down, so the
process would die by the signal (exit status 143) instead of exiting 0. The processes here own
SIGINT/SIGTERM themselves and stop uvicorn through ``should_exit``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn


class NoSignalServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
