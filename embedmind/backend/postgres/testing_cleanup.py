"""Making sure a throwaway test server never outlives the process that started it.

:class:`~embedmind.backend.postgres.testing.ThrowawayServer` stops its server
on context exit and at interpreter exit; this module covers the ways a test
process ends without either:

* **SIGTERM / SIGHUP** (a CI runner cancelling a job, a closed terminal): the
  default action ends the process without running ``atexit``. A handler,
  installed while a server runs, stops every server of the process, then lets
  the signal do what it would have done (the previous handler, or the default
  action, so the exit status still says "killed by SIGTERM"). SIGINT needs
  none: Python raises ``KeyboardInterrupt``, pytest runs the fixtures'
  finalizers and the interpreter runs ``atexit``.
* **SIGKILL, a crash, ``os._exit``**: nothing runs in the process, so each
  server has a *watchdog*, a tiny ``sh`` loop in its own session that polls
  the owner every second and, once it is gone, shuts the postmaster down
  (SIGQUIT: immediate shutdown, then SIGKILL) and removes the directories.
* **A run killed with its watchdog** (or a machine that lost power): the
  directories are named after the owner's pid (``embedmind-pgdata-<pid>-*``),
  and each new server first reaps those whose owner no longer exists. A
  directory whose owner is alive — another test run on the same machine — or
  whose name carries no pid is never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

MEMORY_ROOT = Path("/dev/shm")  # noqa: S108 - only a parent: mkdtemp makes a private dir
"""The RAM file system a throwaway server's data directory prefers (:func:`memory_root`)."""
MEMORY_ROOT_MIN_FREE = 2 * 1024**3
"""Free bytes :data:`MEMORY_ROOT` needs to be used (a test cluster's WAL grows)."""
PREFIXES = ("embedmind-pgdata-", "embedmind-pgbin-")
"""Temporary directory prefixes of throwaway servers; the owner's pid follows."""
_OWNED_NAME = re.compile(r"^embedmind-pg(?:data|bin)-(\d+)-")
_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_WATCHDOG = (
    'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
    'kill -QUIT "$2" 2>/dev/null; sleep 2; kill -KILL "$2" 2>/dev/null; '
    'shift 2; rm -rf -- "$@"'
)
"""``sh -c`` script: wait for the owner ($1) to go, stop the postmaster ($2), remove the rest."""

_stoppers: dict[int, Callable[[], None]] = {}
_previous: dict[int, Any] = {}
_lock = threading.Lock()


def owned_tempdir(prefix: str, root: Path | None = None) -> Path:
    """A fresh temporary directory named ``<prefix><this pid>-...``, so a later run can reap it.

    Args:
        prefix: One of :data:`PREFIXES`.
        root: Where to make it (the system's temporary directory by default).
    """
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


def memory_root() -> Path | None:
    """:data:`MEMORY_ROOT` when it is writable and has room, else ``None``.

    A throwaway cluster's data directory goes there: creating a table makes
    several files, and on a disk-backed ``/tmp`` a fresh store's schema took
    ~140 ms against ~31 ms on tmpfs, while every PostgreSQL test opens fresh
    schemas. A container's default 64 MB ``/dev/shm`` is too small and skipped.
    """
    try:
        found = os.statvfs(MEMORY_ROOT)
    except OSError:
        return None
    if not os.access(MEMORY_ROOT, os.W_OK | os.X_OK):
        return None
    return MEMORY_ROOT if found.f_bavail * found.f_frsize >= MEMORY_ROOT_MIN_FREE else None


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return state != "Z"


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid in a data directory's ``postmaster.pid``, if it names a live process."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
        if alive(pid):
            return pid
    return None


def kill_postmaster(data_dir: Path, *, grace: float = 5.0) -> None:
    """Shut down the postmaster of ``data_dir``: SIGQUIT (immediate), SIGKILL after ``grace``."""
    pid = postmaster_pid(data_dir)
    if pid is None or not _runs_from(pid, data_dir):
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGQUIT)
    deadline = time.monotonic() + grace
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _runs_from(pid: int, data_dir: Path) -> bool:
    """Whether ``pid`` is a server of ``data_dir`` (not a recycled pid of something else)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid file, as pg_ctl does
    return os.fsencode(str(data_dir)) in command


def reap_stale(tmp: Path | None = None) -> list[Path]:
    """Stop and delete the servers of earlier runs whose owner process is gone.

    Args:
        tmp: The directory to look in; by default the system's temporary
            directory and :data:`MEMORY_ROOT` (where data directories go).

    Returns:
        The directories removed.
    """
    roots = [Path(tmp)] if tmp else [Path(tempfile.gettempdir()), MEMORY_ROOT]
    reaped: list[Path] = []
    for root in roots:
        with contextlib.suppress(OSError):
            for path in sorted(root.iterdir()):
                match = _OWNED_NAME.match(path.name)
                if match is None or not path.is_dir() or alive(int(match.group(1))):
                    continue
                if path.name.startswith(PREFIXES[0]):
                    kill_postmaster(path)
                shutil.rmtree(path, ignore_errors=True)
                reaped.append(path)
    return reaped


def start_watchdog(postmaster: int | None, paths: list[Path]) -> subprocess.Popen[bytes]:
    """Start a watchdog: once this process is gone it stops ``postmaster``, removes ``paths``."""
    return subprocess.Popen(  # noqa: S603 - a fixed script, arguments passed apart
        ["/bin/sh", "-c", _WATCHDOG, "sh", str(os.getpid()), str(postmaster or 0),
         *map(str, paths)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C or a group kill aimed at the tests spares it
        close_fds=True,
    )  # fmt: skip


def stop_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    """End a watchdog this process started (its server was stopped the ordinary way)."""
    if watchdog is None or watchdog.poll() is not None:
        return
    with contextlib.suppress(OSError):  # its own session: the group is the script and its sleep
        os.killpg(watchdog.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        watchdog.wait(timeout=5)


def on_signals(key: int, stop: Callable[[], None]) -> None:
    """Run ``stop`` on SIGTERM/SIGHUP while registered (main thread only; else atexit alone)."""
    with _lock:
        _stoppers[key] = stop
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _SIGNALS:
            if sig in _previous:
                continue
            with contextlib.suppress(ValueError, OSError):
                _previous[sig] = signal.signal(sig, _handle)


def forget(key: int) -> None:
    """Unregister a stopped server; the last one restores the previous handlers."""
    with _lock:
        _stoppers.pop(key, None)
        if _stoppers or threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in list(_previous.items()):
            with contextlib.suppress(ValueError, OSError, TypeError):
                if signal.getsignal(sig) is _handle:
                    signal.signal(sig, previous)
            del _previous[sig]


def _handle(signum: int, frame: FrameType | None) -> None:
    with _lock:
        stoppers = list(_stoppers.values())
    for stop in stoppers:
        with contextlib.suppress(Exception):
            stop()
    previous = _previous.pop(signum, signal.SIG_DFL)
    signal.signal(signum, previous)
    if callable(previous):
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        os.kill(os.getpid(), signum)  # the default action: the status says which signal
