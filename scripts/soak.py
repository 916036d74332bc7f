"""Run the reliability and security suites at their long sizes, round after round, and summarise.

Usage: python scripts/soak.py --minutes 30 [--full]

Every file under tests/reliability and tests/security is one suite. Each round runs
every suite once with the sizes below (``--full`` uses the sizes of RELIABILITY.md's
brackets for each round, which take hours); the figures each test records (see the
``figures`` fixture in tests/conftest.py) are collected through ``EMBEDMIND_FIGURES``
and added up across rounds. The summary table shows, per suite: runs, failures,
trials (kill -9 trials, crash states, corruption cases, examples...), acknowledged
writes, losses, violations, the worst stall and the WAL high-water mark. Exits
non-zero on any failure or violation. A suite still running at the deadline is cut
(its process group killed) and counted as cut, neither passed nor failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITES = sorted(
    str(p.relative_to(ROOT))
    for folder in ("tests/reliability", "tests/security")
    for p in (ROOT / folder).glob("test_*.py")
)

# Sizes of one round: long enough to matter, short enough that a 30-minute soak cycles
# through every suite at least once on 2 cores. Rounds add up (e.g. 7 rounds of the
# crash test = 2,100 kill -9 trials).
ROUND_SIZES = {
    "HYPOTHESIS_PROFILE": "soak",  # 300 examples x 150 steps (tests/conftest.py)
    "EMBEDMIND_CRASH_TRIALS": "150",
    "EMBEDMIND_CORRUPTION_CASES": "500",
    "EMBEDMIND_POWER_LOSS_STATES": "2000",
    "EMBEDMIND_READERS": "4",
    "EMBEDMIND_READERS_SECONDS": "60",
    "EMBEDMIND_WRITERS_SECONDS": "20",
    "EMBEDMIND_RECONCILE_EXAMPLES": "300",
}
FULL_SIZES = {
    "HYPOTHESIS_PROFILE": "nightly",  # 3,000 x 150
    "EMBEDMIND_CRASH_TRIALS": "2000",
    "EMBEDMIND_CORRUPTION_CASES": "2000",
    "EMBEDMIND_POWER_LOSS_STATES": "20000",
    "EMBEDMIND_READERS": "4",
    "EMBEDMIND_READERS_SECONDS": "600",
    "EMBEDMIND_WRITERS_SECONDS": "60",
    "EMBEDMIND_RECONCILE_EXAMPLES": "2000",
}
# The ini's 300 s per test suits the CI sizes, not these.
TEST_TIMEOUT_S = 3600

# How a figure adds up across runs, by the words in its name.
SUMMED = ("trials", "states", "cases", "examples", "acknowledged", "writes", "lost", "leaks")
WORST = ("stall", "wal", "latency")
VIOLATIONS = ("lost", "leaks", "errors", "crashed", "wrong", "violations", "failed_opens")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--full", action="store_true", help="RELIABILITY.md's long sizes per round")
    parser.add_argument("-k", default=None, help="only suites whose path contains this")
    args = parser.parse_args()
    suites = [s for s in SUITES if args.k is None or args.k in s]
    sizes = FULL_SIZES if args.full else ROUND_SIZES
    figures_file = Path(tempfile.mkstemp(prefix="embedmind-soak-", suffix=".jsonl")[1])
    env = {**os.environ, **sizes, "EMBEDMIND_FIGURES": str(figures_file)}
    print("sizes per round: " + " ".join(f"{k}={v}" for k, v in sizes.items()), flush=True)
    deadline = time.monotonic() + args.minutes * 60
    runs: dict[str, dict[str, float]] = {s: defaultdict(float) for s in suites}
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
        for suite in suites:
            if time.monotonic() >= deadline:
                break
            started = time.monotonic()
            returncode = _run_until(suite, env, deadline)
            elapsed = time.monotonic() - started
            row = runs[suite]
            if returncode is None:
                row["cut"] += 1
                status = "cut at the deadline"
            else:
                row["runs"] += 1
                row["failed"] += returncode != 0
                row["slowest_s"] = max(row["slowest_s"], elapsed)
                status = "ok" if returncode == 0 else "FAILED"
            print(f"[round {rounds}] {suite:<48} {status} ({elapsed:.0f}s)", flush=True)
    table = _table(runs, figures_file)
    print()
    print(table)
    failed = any(r["failed"] or r["violations"] for r in runs.values())
    print(f"\nrounds started: {rounds}; figures: {figures_file}")
    print("RESULT: " + ("VIOLATIONS FOUND" if failed else "0 failures, 0 violations"))
    return 1 if failed else 0


def _run_until(suite: str, env: dict[str, str], deadline: float) -> int | None:
    """Run one suite; None when the deadline came first (its whole process group is killed)."""
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
        f"--timeout={TEST_TIMEOUT_S}", suite,
    ]  # fmt: skip
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # so the crash tests' children die with it
    ) as child:  # fmt: skip
        try:
            output, _ = child.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return None
    if child.returncode != 0:
        print(output[-4000:], flush=True)
    return child.returncode


def _table(runs: dict[str, dict[str, float]], figures_file: Path) -> str:
    """Fold the recorded figures into the runs and format the summary table."""
    for line in figures_file.read_text(encoding="utf-8").splitlines():
        record: dict[str, Any] = json.loads(line)
        suite = record["test"].split("::")[0]
        row = runs.setdefault(suite, defaultdict(float))
        for key, value in record.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            if any(word in key for word in VIOLATIONS):
                row["violations"] += value
            if any(word in key for word in WORST):
                row[_column(key)] = max(row[_column(key)], value)
            elif any(word in key for word in SUMMED):
                row[_column(key)] += value
    columns = ["runs", "failed", "cut", "trials", "acknowledged", "lost", "violations"]
    columns += ["stall_ms", "wal_mb", "slowest_s"]
    lines = [f"{'suite':<48} " + " ".join(f"{c:>12}" for c in columns)]
    for suite, row in runs.items():
        cells = [_cell(row.get(c)) for c in columns]
        lines.append(f"{suite:<48} " + " ".join(f"{c:>12}" for c in cells))
    return "\n".join(lines)


def _column(key: str) -> str:
    """The table column a figure belongs to."""
    if "stall" in key or "latency" in key:
        return "stall_ms"
    if "wal" in key:
        return "wal_mb"
    if "acknowledged" in key or "writes" in key:
        return "acknowledged"
    if "lost" in key or "leaks" in key:
        return "lost"
    return "trials"


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


if __name__ == "__main__":
    sys.exit(main())
