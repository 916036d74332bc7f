"""Run one phase of ``make test`` and print how long it took: wall, and CPU of its processes.

Usage: python scripts/phase.py NAME COMMAND [ARG...]

Prints ``phase NAME: wall 123.4 s, cpu 210.0 s (user 200.1 s, sys 9.9 s)`` on stderr
when the command ends and exits with its status. The CPU figure adds up every process
of the phase that was waited for (the pytest workers, the venvs' pip...), so it says
how much work a phase is even on a loaded machine; a throwaway PostgreSQL server
(``pg_ctl`` detaches it) is not counted. Standard library only: it runs before the
venv exists.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    name, command = sys.argv[1], sys.argv[2:]
    began = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen(command)
    # A Ctrl-C reaches the child too (one process group): let it finish its own way
    # (pytest runs its finalizers, which stop the throwaway servers) and report that.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status = child.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(
        f"phase {name}: wall {time.perf_counter() - began:.1f} s, cpu {user + system:.1f} s "
        f"(user {user:.1f} s, sys {system:.1f} s){'' if status == 0 else f', exit {status}'}",
        file=sys.stderr,
        flush=True,
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
