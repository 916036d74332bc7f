"""``embedmind bench`` through the engine's CLI once this distribution is installed.

Moved from the engine's tests/test_cli.py and tests/test_cli_habits.py: they
need the workloads, which the engine no longer ships.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from embedmind.cli import bench_seam
from embedmind.cli.main import EXIT_INVALID, build_parser, main
from embedmind_bench import cli as bench

EXE = str(Path(sys.executable).with_name("embedmind"))


def _error_line(err: str) -> str:
    """The one ``error:`` line on stderr (progress bars may precede it), never a traceback."""
    assert "Traceback" not in err, err
    errors_seen = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors_seen) == 1 and err.endswith(errors_seen[0] + "\n"), err
    return errors_seen[0]


@pytest.mark.parametrize("option", ["--workdir", "--json"])
def test_bench_refuses_unusable_paths_before_running(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path = tmp_path / "missing" if option == "--workdir" else blocker / "figures.json"
    code = main(["bench", "vector", "--no-progress", option, str(path)])
    captured = capsys.readouterr()
    assert code == EXIT_INVALID and captured.out == ""
    assert _error_line(captured.err).startswith(f"error: {option}: ") and str(path) in captured.err


def test_no_progress_before_bench_survives_the_workload_defaults() -> None:
    parse = build_parser().parse_args
    assert parse(["--no-progress", "bench", "vector"]).no_progress is True
    assert parse(["bench", "vector", "--no-progress"]).no_progress is True
    assert parse(["bench", "vector"]).no_progress is False
    # bench's own --json is the figures file; the global one comes before bench.
    args = parse(["--json", "bench", "vector", "--json", "figures.json"])
    assert args.json is True and str(args.json_path) == "figures.json"


def test_the_engine_cli_registers_this_package_s_workloads() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    workloads = commands["bench"]._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(workloads) == set(bench.WORKLOADS)
    assert bench.EXIT_SKIPPED == bench_seam.EXIT_SKIPPED == 5


def test_bench_help_lists_every_workload_through_the_console_script() -> None:
    done = subprocess.run([EXE, "bench", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    for workload in bench.WORKLOADS:
        assert workload in done.stdout
    assert "not available" not in done.stdout.lower()
