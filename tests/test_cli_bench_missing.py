"""``embedmind bench`` without the embedmind-bench distribution: one line naming the fix.

The benchmarks are their own distribution (bench/); the engine's CLI keeps the
``bench`` command and delegates to ``embedmind_bench`` when it is importable.
Here it is made unimportable in a child process (a ``None`` entry in
``sys.modules`` blocks the import even though the editable install is present).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from embedmind.cli.main import EXIT_INVALID

BLOCKED = (
    "import sys; sys.modules['embedmind_bench'] = None; "
    "from embedmind.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED, *argv], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "argv",
    [["bench", "locomo"], ["bench", "recall", "--size", "2000", "--json", "x.json"], ["bench"]],
)
def test_bench_without_the_distribution_names_the_fix(argv: list[str]) -> None:
    done = _cli(*argv)
    assert done.returncode == EXIT_INVALID and done.stdout == ""
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: bench: ")
    assert "pip install embedmind-bench" in done.stderr and "pip install -e bench/" in done.stderr


def test_bench_help_without_the_distribution_says_what_to_install() -> None:
    done = _cli("bench", "--help")
    assert done.returncode == 0, done.stderr
    assert "pip install embedmind-bench" in " ".join(done.stdout.split())


def test_other_commands_work_without_the_distribution(tmp_path: Path) -> None:
    store = str(tmp_path / "m.mind")
    done = _cli("--store", store, "--embedder", "hashing", "remember", "tea at noon", "--id", "t")
    assert (done.returncode, done.stdout, done.stderr) == (0, "remembered t\n", "")


def test_a_broken_benchmark_install_costs_only_bench() -> None:
    # embedmind_bench itself is found, but its CLI module fails to import.
    broken = BLOCKED.replace("'embedmind_bench'", "'embedmind_bench.cli'")
    done = subprocess.run(
        [sys.executable, "-c", broken, "bench", "vector"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_INVALID, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.startswith("error: bench: ")
    assert "does not import" in done.stderr and "reinstall" in done.stderr
