"""Run the reliability tests at their long sizes, repeatedly, and summarise.

Usage: python scripts/soak.py --minutes 30
Long sizes: HYPOTHESIS_PROFILE=nightly (3,000 examples x 150 steps) and
EMBEDMIND_CRASH_TRIALS (--crash-trials, default 2000) for the kill -9 test. Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = [
    "tests/reliability/test_crash_durability.py",
    "tests/reliability/test_crashpoints.py",
    "tests/reliability/test_io_faults.py",
    "tests/reliability/test_multiprocess.py",
    "tests/reliability/test_vector_index_files.py",
    "tests/reliability/test_state_machine.py",
    "tests/reliability/test_redact_vacuum.py",
    "tests/security/test_filters_oracle.py",
    "tests/security/test_injection.py",
]

# The ini's 300 s per test suits the CI sizes; at the long sizes the state machine alone runs
# for minutes, and a timeout firing inside hypothesis reads as a flaky strategy, not a hang.
SUITE_TIMEOUT_S = 1800


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument(
        "--crash-trials",
        type=int,
        default=2000,
        help="kill -9 trials per round of the crash test (the deadline is checked between suites)",
    )
    args = parser.parse_args()
    env = {
        **os.environ,
        "HYPOTHESIS_PROFILE": "nightly",
        "EMBEDMIND_CRASH_TRIALS": str(args.crash_trials),
    }
    deadline = time.monotonic() + args.minutes * 60
    table: dict[str, list[float]] = {suite: [0, 0, 0.0, 0] for suite in SUITES}
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
        for suite in SUITES:
            if time.monotonic() >= deadline:
                break
            started = time.monotonic()
            returncode = _run_until(suite, env, deadline)
            row = table[suite]
            elapsed = time.monotonic() - started
            if returncode is None:  # the deadline fell inside this run: neither pass nor fail
                row[3] += 1
                print(
                    f"[round {rounds}] {suite:<38} cut at the deadline ({elapsed:.0f}s)", flush=True
                )
                continue
            row[0] += 1
            row[1] += returncode != 0
            row[2] = max(row[2], elapsed)
            status = "ok" if returncode == 0 else "FAILED"
            print(f"[round {rounds}] {suite:<38} {status} ({elapsed:.0f}s)", flush=True)
    print(f"\n{'suite':<38} {'runs':>5} {'failed':>7} {'slowest s':>10} {'cut':>4}")
    for suite, (runs, failed, slowest, cut) in table.items():
        print(f"{suite:<38} {int(runs):>5} {int(failed):>7} {slowest:>10.0f} {int(cut):>4}")
    return 1 if any(row[1] for row in table.values()) else 0


def _run_until(suite: str, env: dict[str, str], deadline: float) -> int | None:
    """Run one suite; None when the deadline came first (its whole process group is killed)."""
    with subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", f"--timeout={SUITE_TIMEOUT_S}", suite],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # so the crash test's writer children die with it
    ) as child:  # fmt: skip
        try:
            output, _ = child.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return None
    if child.returncode != 0:
        print(output[-3000:], flush=True)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
