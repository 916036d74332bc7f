"""R3: simulated power loss for the engine's own files.

A child process runs a workload (remember / remember_many / forget with vectors,
close and reopen, the periodic index save inside a write, vacuum, a re-embed that
unlinks the index file) while ``tests/tooling/power_loss.py`` records, at the
``embedmind.backend.sqlite.fileio`` layer, every operation on the engine's own files:
create, the bytes written, fsync, rename, unlink, directory fsync — plus every
SQLite commit that returned (with a copy of the database) and every call the
workload saw return (``ack``).

Each crash state picks a cut point in that log and draws, from a seeded RNG, what
a disk could hold after power loss there: a file is its last-fsynced bytes plus
any subset of the later writes, in any order, each possibly torn; a create,
rename or unlink not followed by a directory fsync may be lost. The database is
taken as of the last commit that returned before the cut — SQLite's own
durability with ``synchronous=FULL`` is SQLite's job, not this test's — so that
every write acknowledged before the cut must be there.

Each state is then opened in a child process (index files are only ever loaded
in children; a death by signal fails the test), 50 states per child, and must:

- open (never fail);
- trust the index file exactly when its size and checksum match the registry,
  and otherwise rebuild; a file the last commit registered must have survived
  (its fsync and the directory fsync come before the commit);
- hold every acknowledged memory and nothing never written;
- answer vector recall like a brute-force cosine over the stored vectors;
- trust, on a second open, the file the first open left.

Sizes: ``EMBEDMIND_POWER_LOSS_STATES`` (default 200; the soak sets 20,000), seed
``EMBEDMIND_POWER_LOSS_SEED``. A failure names the seed and the state, and
``state i`` is reproducible on its own: its RNG is seeded with ``"{seed}:{i}"``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tooling.children import child_env
from tooling.power_loss import FILE_OPS, CrashState, crash_state, load_log, materialise

# Serial pass of `make test` (not beside other tests): hundreds of child processes replaying crash states.
pytestmark = pytest.mark.serial

if TYPE_CHECKING:
    from conftest import Figures

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tests" / "tooling" / "power_loss.py"
STATES = int(os.environ.get("EMBEDMIND_POWER_LOSS_STATES", "200"))
SEED = int(os.environ.get("EMBEDMIND_POWER_LOSS_SEED", "20250301"))
PER_CHILD = 50
CHILDREN_AT_ONCE = max(1, min(2, os.cpu_count() or 1))


def _record(out: Path, mutant: str = "") -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, str(TOOL), "record", str(out), *([mutant] if mutant else [])],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"the recording child failed ({proc.returncode}):\n{proc.stderr}"
    events = load_log(out)
    unobserved = [e for e in events if e["op"] == "unobserved"]
    assert not unobserved, f"engine files changed outside fileio: {unobserved}"
    return events


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("power-loss") / "recording"
    events = _record(out)
    ops = Counter(e["op"] for e in events)
    # The workload must have exercised what R3 is about.
    assert ops["rename"] >= 5 and ops["dirsync"] >= 5 and ops["unlink"] >= 1, ops
    assert ops["write"] > ops["fsync"] > 0, ops
    return out, events


def _pick_cut(events: list[dict[str, Any]], rng: random.Random) -> int:
    """Half the cuts fall right after a file operation (mid-save), half anywhere."""
    if rng.random() < 0.5:
        return rng.choice([i + 1 for i, e in enumerate(events) if e["op"] in FILE_OPS])
    return rng.randint(0, len(events))


def _state(events: list[dict[str, Any]], seed: int, number: int) -> CrashState:
    rng = random.Random(f"{seed}:{number}")
    return crash_state(events, _pick_cut(events, rng), rng)


def _check_batch(
    recording_dir: Path, workdir: Path, states: dict[int, CrashState]
) -> list[dict[str, Any]]:
    """Materialise ``states``, check them in one child process, delete them."""
    specs = []
    for number, state in states.items():
        target = workdir / f"state-{number}"
        materialise(state, target, recording_dir)
        specs.append(
            {
                "state": number,
                "dir": str(target),
                "must_live": state.must_live,
                "may_live": state.may_live,
                "must_trust": state.must_trust,
            }
        )
    batch = workdir / "batch.json"
    batch.write_text(json.dumps(specs))
    proc = subprocess.run(
        [sys.executable, str(TOOL), "check", str(batch)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60 + 5 * len(states),
        check=False,
    )
    first = min(states)
    assert proc.returncode == 0, (
        f"seed {SEED}: the checking child of states {first}..{max(states)} died "
        f"({proc.returncode}):\n{proc.stderr[-3000:]}"
    )
    reports = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["state"] for r in reports] == list(states), proc.stdout[-2000:]
    for number in states:
        shutil.rmtree(workdir / f"state-{number}")
    return reports


def _problems(report: dict[str, Any]) -> list[str]:
    problems = [*report["errors"]]
    if "failed_open" in report:
        problems.append(f"open failed: {report['failed_open']}")
    if report["lost"]:
        problems.append(f"acknowledged memories lost: {report['lost']}")
    if not report.get("healed", True):
        problems.append("a second open did not trust the file the first one saved")
    return problems


def _check(
    recording_dir: Path, workdir: Path, states: dict[int, CrashState]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Check ``states``, ``PER_CHILD`` to a child; return the reports and each failure."""
    workdir.mkdir()
    reports: list[dict[str, Any]] = []
    failures: list[str] = []
    numbers = list(states)
    for start in range(0, len(numbers), PER_CHILD):
        batch = {n: states[n] for n in numbers[start : start + PER_CHILD]}
        for report in _check_batch(recording_dir, workdir, batch):
            reports.append(report)
            problems = _problems(report)
            if problems:
                number = report["state"]
                failures.append(f"state {number} ({states[number].describe}): {problems}")
    return reports, failures


def _run(
    recording_dir: Path, events: list[dict[str, Any]], workdir: Path, count: int, seed: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """Check ``count`` seeded states, drawn a child's worth at a time (memory stays flat).

    :data:`CHILDREN_AT_ONCE` children check their batches side by side: one at a
    time left a core idle in the serial pass (the checks time nothing).
    """
    workdir.mkdir()

    def chunk(start: int) -> tuple[list[dict[str, Any]], list[str]]:
        states = {n: _state(events, seed, n) for n in range(start, min(start + PER_CHILD, count))}
        got = _check(recording_dir, workdir / f"batch-{start}", states)
        shutil.rmtree(workdir / f"batch-{start}")
        return got

    reports: list[dict[str, Any]] = []
    failures: list[str] = []
    with ThreadPoolExecutor(CHILDREN_AT_ONCE) as pool:
        for got, failed in pool.map(chunk, range(0, count, PER_CHILD)):  # in order
            reports += got
            failures += failed
    return reports, failures


@pytest.mark.timeout(120 + STATES // 2)
def test_power_loss_never_breaks_an_open_or_loses_a_write(
    recording: tuple[Path, list[dict[str, Any]]], tmp_path: Path, figures: Figures
) -> None:
    recording_dir, events = recording
    started = time.monotonic()
    reports, failures = _run(recording_dir, events, tmp_path / "states", STATES, SEED)
    trusted = sum(bool(r.get("trusted")) for r in reports)
    registered = sum(bool(r.get("registered")) for r in reports)
    figures(
        states=len(reports),
        trusted=trusted,
        rebuilt=len(reports) - trusted,
        rebuilt_registered=registered - trusted,
        lost=sum(len(r["lost"]) for r in reports),
        failed_opens=sum("failed_open" in r for r in reports),
        healed=sum(bool(r.get("healed")) for r in reports),
        failures=len(failures),
        events=len(events),
        seconds=round(time.monotonic() - started, 1),
        seed=SEED,
    )
    assert not failures, f"seed {SEED}: {len(failures)} failing states:\n" + "\n".join(
        failures[:10]
    )
    # Both outcomes must have been exercised, or the states prove little.
    assert trusted and registered - trusted, (trusted, registered)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mutant", ["no-dirsync", "no-fsync"])
def test_the_harness_notices_a_missing_sync(tmp_path: Path, mutant: str) -> None:
    """Without the engine's directory fsync (or file fsync) a registered file can vanish."""
    recording_dir = tmp_path / "recording"
    events = _record(recording_dir, mutant)
    _, failures = _run(recording_dir, events, tmp_path / "states", 60, SEED)
    assert any("did not survive power loss" in f for f in failures), failures


@pytest.mark.timeout(120)
def test_every_save_cut_between_its_directory_fsync_and_its_commit(
    recording: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """The file is in place but the registry still names the previous one: rebuild, then heal.

    Deterministic (nothing lost), one state per save. Vacuum's forced save is the
    sharp case: the registry already names the current sequence, so a save that
    skipped "nothing changed" would leave the stray file and rebuild at every open.
    """
    recording_dir, events = recording
    rng = random.Random(SEED)
    cuts = [i + 1 for i, e in enumerate(events) if e["op"] == "dirsync"]
    states = {n: crash_state(events, cut, rng, everything=True) for n, cut in enumerate(cuts)}
    reports, failures = _check(recording_dir, tmp_path / "states", states)
    assert not failures, "\n".join(failures)
    assert len(reports) == len(cuts) >= 5
    assert not any(r["trusted"] for r in reports if r["registered"]), reports
    assert all(r["healed"] for r in reports), reports
