"""Named crash points for the reliability harness; free in production.

``crashpoint("name")`` does nothing unless ``EMBEDMIND_CRASHPOINT=name:n`` is
set, in which case the process kills itself with SIGKILL on the n-th hit of
that point — exactly what a power cut or an OOM kill does at that instant.
The variable is read once per process.
"""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("EMBEDMIND_CRASHPOINT", "")
_NAME, _, _COUNT = _SPEC.partition(":")
_TARGET = int(_COUNT) if _COUNT.isdigit() else 1
_hits = 0


def crashpoint(name: str) -> None:
    """Die here (SIGKILL) when the harness asked for it; otherwise return at once."""
    global _hits
    if not _NAME or name != _NAME:
        return
    _hits += 1
    if _hits >= _TARGET:
        os.kill(os.getpid(), signal.SIGKILL)
