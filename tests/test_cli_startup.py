"""What the ``embedmind`` command imports before it runs a command (issue 52).

``--help``, ``--version`` and a usage error only build the parser: they must
not load numpy, the model runtime, a backend or the plugins (each call took
0.7-0.9 s when they did). Checked through the console script in a fresh
interpreter with ``-X importtime``, which names every module imported; no
test here measures time.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from embedmind.cli import global_options
from embedmind.cli.main import build_parser
from embedmind.embedders import adapt

EXE = str(Path(sys.executable).with_name("embedmind"))
HEAVY = ("numpy", "onnxruntime", "tokenizers", "apsw", "psycopg", "usearch", "pluggy", "tqdm")
# The engine's modules that pull those in: the store, the backends, the plugin registry.
ENGINE = ("embedmind.store", "embedmind.backend.sqlite", "embedmind.backend.postgres.backend",
          "embedmind.plugins", "embedmind.embedders.minilm")  # fmt: skip


def imported(*argv: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the console script under ``-X importtime``; return the run and the modules imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", EXE, *argv],
        capture_output=True, text=True, cwd=cwd, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done, modules - {"package"}  # "package" is the header row's last column


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--help"], 0),
        (["--version"], 0),
        (["recall", "--help"], 0),
        (["recall"], 2),  # a missing argument
        (["--json", "get"], 2),  # the same as JSON
        (["--store", "x.mind", "nosuch"], 2),  # an unknown command
    ],
    ids=["help", "version", "command-help", "usage-error", "json-usage-error", "unknown"],
)
def test_parsing_alone_loads_no_engine(argv: list[str], code: int, tmp_path: Path) -> None:
    done, modules = imported(*argv, cwd=tmp_path)
    assert done.returncode == code, done.stderr[-2000:]
    assert "embedmind.cli.main" in modules, "importtime saw the command line"
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    engine = sorted(m for m in modules if m.startswith(ENGINE))
    assert heavy == [] and engine == [], (heavy, engine)
    assert list(tmp_path.iterdir()) == []


def test_a_command_still_loads_what_it_needs(tmp_path: Path) -> None:
    done, modules = imported("--store", "s.mind", "--embedder", "hashing", "remember", "tea",
                             cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"numpy", "apsw", "embedmind.store", "embedmind.plugins"} <= modules


def test_version_is_the_installed_distribution(tmp_path: Path) -> None:
    done = subprocess.run([EXE, "--version"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"embedmind {importlib.metadata.version('embedmind')}\n"


def test_the_default_embedder_name_is_spelled_once_more_here_and_agrees() -> None:
    # global_options cannot import embedders.adapt (it loads numpy): pin the copy.
    assert global_options.DEFAULT_EMBEDDER == adapt.DEFAULT


def test_the_package_loads_its_public_names_on_first_use() -> None:
    code = (
        "import sys, embedmind; "
        "before = 'numpy' in sys.modules or 'embedmind.store' in sys.modules; "
        "import embedmind.reembed; "  # the submodule must not replace the function
        "from embedmind import Store, Memory; "
        "print(before, callable(embedmind.reembed), Store.__module__, Memory.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    assert done.stdout.split() == ["False", "True", "embedmind.store", "embedmind.model"]


def test_the_help_is_the_same_whether_the_benchmarks_load_or_not() -> None:
    # main() skips importing the benchmarks when no argument is "bench": only
    # their one line is in `embedmind --help`, and it must read the same.
    assert build_parser(bench=False).format_help() == build_parser(bench=True).format_help()
