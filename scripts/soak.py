"""Run the reliability tests at their long sizes, repeatedly, and summarise.

Usage: python scripts/soak.py --minutes 30
Long sizes: HYPOTHESIS_PROFILE=nightly (3,000 examples x 150 steps) and
EMBEDMIND_CRASH_TRIALS (--crash-trials, default 2000) for the kill -9 test. Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = [
    "tests/test_crash_durability.py",
    "tests/test_crashpoints.py",
    "tests/test_io_faults.py",
    "tests/test_multiprocess.py",
    "tests/test_vector_index_files.py",
    "tests/test_state_machine.py",
    "tests/test_redact_vacuum.py",
    "tests/test_filters_oracle.py",
    "tests/test_injection.py",
]


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
    table: dict[str, list[float]] = {suite: [0, 0, 0.0] for suite in SUITES}
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
        for suite in SUITES:
            if time.monotonic() >= deadline:
                break
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", suite],
                cwd=ROOT, env=env, capture_output=True, text=True,
            )  # fmt: skip
            row = table[suite]
            row[0] += 1
            row[1] += done.returncode != 0
            row[2] = max(row[2], time.monotonic() - started)
            status = "ok" if done.returncode == 0 else "FAILED"
            print(
                f"[round {rounds}] {suite:<38} {status} ({time.monotonic() - started:.0f}s)",
                flush=True,
            )
            if done.returncode != 0:
                print(done.stdout[-3000:], flush=True)
    print(f"\n{'suite':<38} {'runs':>5} {'failed':>7} {'slowest s':>10}")
    for suite, (runs, failed, slowest) in table.items():
        print(f"{suite:<38} {int(runs):>5} {int(failed):>7} {slowest:>10.0f}")
    return 1 if any(row[1] for row in table.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
