"""The throwaway server never outlives the test process, however that process ends.

Each test starts a server in a child Python process, ends the child the way a
test run ends badly (SIGTERM, SIGINT, SIGKILL) and looks at the postmaster the
child reported: it must be gone — at once when the child could run its own
cleanup, within seconds (the watchdog) when it could not — and its directories
with it. A run killed together with its watchdog leaves a live postmaster and
its directories; the next server reaps them. A directory of a live process is
never reaped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from embedmind.backend.postgres import testing_cleanup
from embedmind.backend.postgres.testing import ThrowawayServer

# Serial pass of `make test` (not beside other tests): kills servers' owners and waits for watchdogs against deadlines.
pytestmark = pytest.mark.serial

CHILD = """
import json, sys, time
from embedmind.backend.postgres import testing_cleanup
from embedmind.backend.postgres.testing import ThrowawayServer
server = ThrowawayServer.start()
print(json.dumps({
    "postmaster": testing_cleanup.postmaster_pid(server.data_dir),
    "watchdog": server._watchdog.pid,
    "paths": [str(p) for p in server._owned],
}), flush=True)
time.sleep(600)
"""


def _child() -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        pytest.fail(
            f"the child did not start a server:\n{proc.stderr.read() if proc.stderr else ''}"
        )
    started = json.loads(line)
    assert isinstance(started["postmaster"], int) and testing_cleanup.alive(started["postmaster"])
    return proc, started


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while testing_cleanup.alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_test_process_stops_its_server_before_it_exits(sig: signal.Signals) -> None:
    proc, started = _child()
    try:
        proc.send_signal(sig)
        proc.wait(timeout=60)
        # At once, not after the watchdog's next poll: the child stopped it itself.
        assert not testing_cleanup.alive(int(started["postmaster"])), "the postmaster outlived it"
        assert not any(Path(p).exists() for p in started["paths"])
        if sig != signal.SIGINT:  # the signal still ends the process as that signal
            assert proc.returncode == -sig
        assert _gone_within(int(started["watchdog"]), 5)
    finally:
        _kill(proc)


def test_a_killed_test_process_has_its_server_stopped_by_the_watchdog() -> None:
    proc, started = _child()
    try:
        proc.kill()
        proc.wait(timeout=30)
        assert _gone_within(int(started["postmaster"]), 10), "the postmaster outlived a SIGKILL"
        deadline = time.monotonic() + 10
        while any(Path(p).exists() for p in started["paths"]):
            assert time.monotonic() < deadline, "the watchdog left the directories"
            time.sleep(0.05)
        assert _gone_within(int(started["watchdog"]), 5)
    finally:
        _kill(proc)


def test_a_run_killed_with_its_watchdog_is_reaped_by_the_next_server() -> None:
    proc, started = _child()
    try:
        os.killpg(int(started["watchdog"]), signal.SIGKILL)
        proc.kill()
        proc.wait(timeout=30)
        postmaster = int(started["postmaster"])
        assert testing_cleanup.alive(postmaster)  # left running: nothing could stop it
        with ThrowawayServer.start() as server:
            assert not testing_cleanup.alive(postmaster), "the stale postmaster was not stopped"
            assert not any(Path(p).exists() for p in started["paths"])
            server._admin("SELECT 1")  # and the new server works
    finally:
        _kill(proc)
        for path in started["paths"]:
            testing_cleanup.kill_postmaster(Path(path))


def test_directories_of_a_live_process_or_without_a_pid_are_never_reaped(tmp_path: Path) -> None:
    mine = tmp_path / f"embedmind-pgdata-{os.getpid()}-abc"
    legacy = tmp_path / "embedmind-pgdata-abc"  # an older version's run, maybe live
    dead_pid = _a_dead_pid()
    stale = tmp_path / f"embedmind-pgbin-{dead_pid}-abc"
    for path in (mine, legacy, stale):
        path.mkdir()
    assert testing_cleanup.reap_stale(tmp_path) == [stale]
    assert mine.exists() and legacy.exists() and not stale.exists()


def _a_dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def test_the_owned_directories_carry_the_owner_pid() -> None:
    path = testing_cleanup.owned_tempdir("embedmind-pgdata-")
    try:
        assert path.parent == Path(tempfile.gettempdir())
        assert path.name.startswith(f"embedmind-pgdata-{os.getpid()}-")
    finally:
        path.rmdir()
