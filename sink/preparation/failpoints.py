"""Named kill points of freeze, seal and admission, for crash tests.

``RESTPROOF_PREPARATION_FAILPOINT=<name>`` makes the process SIGKILL itself when it reaches the
named point: no cleanup, no finally blocks, exactly like a lost host. Unset (always, outside
tests) a failpoint is a no-op.
"""

from __future__ import annotations

import os
import signal

from sink.preparation_points import FAILPOINTS  # the names, listed where runtime can read them cheaply

ENV_VAR = "RESTPROOF_PREPARATION_FAILPOINT"
__all__ = ["ENV_VAR", "FAILPOINTS", "env_failpoint"]


def env_failpoint(name: str) -> None:
    if os.environ.get(ENV_VAR) == name:
        os.kill(os.getpid(), signal.SIGKILL)
