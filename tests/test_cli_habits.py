"""CLI habits from issue 14: global options anywhere, read commands never create a store,
``recall --explain``, ``forget``/``get`` of a missing id, progress bars, ``mcp`` without its extra.

Each behaviour is checked through the ``embedmind`` console script in a child
process, as a user runs it; parser-level oracles cover every command.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import apsw
import pytest

import embedmind
from embedmind.cli.main import (
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_STORAGE,
    build_parser,
    main,
)
from embedmind.embedders.hashing import HashingEmbedder

EXE = str(Path(sys.executable).with_name("embedmind"))
GLOBALS = ["--store", "g.mind", "--json", "--embedder", "hashing", "--no-progress"]
# Every command but bench (it has its own --json PATH), with its required arguments.
COMMANDS = {
    "remember": ["text"],
    "recall": ["query"],
    "list": [],
    "get": ["id"],
    "forget": ["id"],
    "stats": [],
    "reembed": [],
    "vacuum": [],
    "doctor": [],
    "mcp": [],
    "export": ["out.jsonl"],
    "import": ["in.jsonl"],
    "demo": [],
    "aliases": ["list"],
}
READS = [
    "stats", "recall q", "list", "get x", "forget x", "vacuum", "export out.jsonl", "reembed",
    "aliases list", "aliases remove nyc", "aliases reindex",
]  # fmt: skip


def cli(*argv: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the console script with stderr on a pipe, as in a log or CI."""
    return subprocess.run(
        [EXE, *argv], capture_output=True, text=True, cwd=cwd, input=stdin, timeout=120
    )


def error_line(err: str) -> str:
    """The single ``error:`` line a failure prints, never a traceback."""
    assert "Traceback" not in err and err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_every_command_lists_its_subcommands_here() -> None:
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(choices or ()) == {*COMMANDS, "bench"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_global_options_parse_the_same_before_and_after_the_command(command: str) -> None:
    parse = build_parser().parse_args
    before = parse([*GLOBALS, command, *COMMANDS[command]])
    after = parse([command, *COMMANDS[command], *GLOBALS])
    assert vars(before) == vars(after)
    assert (after.store, after.json, after.embedder, after.no_progress) == (
        "g.mind", True, "hashing", True,
    )  # fmt: skip
    # Only one place: the defaults of the other are not a value given.
    split = parse(["--json", command, *COMMANDS[command], "--store", "s.mind"])
    assert (split.json, split.store) == (True, "s.mind")
    # Both places: the one after the command wins, as a repeated option does.
    both = parse(["--store", "a.mind", "--embedder", "x", command, *COMMANDS[command],
                  "--store", "b.mind"])  # fmt: skip
    assert (both.store, both.embedder) == ("b.mind", "x")


def test_global_options_after_the_command_through_the_console_script(tmp_path: Path) -> None:
    made = cli("remember", "Alice likes green tea", "--id", "t", "--store", "s.mind",
               "--embedder", "hashing", "--json", cwd=tmp_path)  # fmt: skip
    assert made.returncode == EXIT_OK and json.loads(made.stdout)["id"] == "t", made.stderr
    found = cli("--store", "elsewhere.mind", "recall", "tea", "--store", "s.mind", "--json",
                cwd=tmp_path)  # fmt: skip
    assert found.returncode == EXIT_OK, found.stderr
    assert [h["memory"]["id"] for h in json.loads(found.stdout)["hits"]] == ["t"]
    assert sorted(p.name for p in tmp_path.glob("*.mind")) == ["s.mind"]


@pytest.mark.parametrize("argv", READS)
def test_read_commands_never_create_a_store(
    argv: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.mind"
    code = main(["--store", str(missing), "--embedder", "hashing", *argv.split()])
    captured = capsys.readouterr()
    assert code == EXIT_NOT_FOUND and captured.out == ""
    assert str(missing) in error_line(captured.err) and "--store" in captured.err
    assert list(tmp_path.iterdir()) == [], "a read command created files"


def test_a_mistyped_store_is_an_error_through_the_console_script(tmp_path: Path) -> None:
    done = cli("stats", "--store", "mistyped.mind", cwd=tmp_path)
    assert done.returncode == EXIT_NOT_FOUND and done.stdout == ""
    assert "'mistyped.mind' does not exist" in error_line(done.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder()) as s:
        s.remember("Alice likes green tea", id="tea")
        s.remember("Bob likes black coffee", id="coffee")
    return path


def test_recall_explain_adds_channel_ranks_and_timings(store: Path) -> None:
    base = ["--store", str(store), "recall", "green tea", "--mode", "hybrid"]
    plain = cli(*base, cwd=store.parent)
    explained = cli(*base, "--explain", cwd=store.parent)
    assert plain.returncode == explained.returncode == EXIT_OK, explained.stderr
    assert "timings" not in plain.stdout and "raw" not in plain.stdout
    lines = explained.stdout.splitlines()
    assert lines[0] == plain.stdout.splitlines()[0]
    assert lines[1].split()[:2] == ["text", "#1"] and "raw" in lines[1]
    assert lines[-1].startswith("mode hybrid; channels text, vector; timings ")
    assert " ms" in lines[-1]
    as_json = json.loads(cli(*base, "--explain", "--json", cwd=store.parent).stdout)
    assert as_json["timings"] and all(v >= 0 for v in as_json["timings"].values())
    assert as_json["hits"][0]["channels"]["text"]["rank"] == 1


@pytest.mark.parametrize("command", ["forget", "get"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_missing_id_is_an_error_line_on_stderr(command: str, as_json: bool, store: Path) -> None:
    done = cli("--store", str(store), *(["--json"] * as_json), command, "nope", cwd=store.parent)
    assert done.returncode == EXIT_NOT_FOUND and done.stdout == ""
    if as_json:  # one JSON object on stderr, the same exit code
        error = json.loads(done.stderr)["error"]
        assert error["type"] == "NotFoundError" and "'nope' does not exist" in error["message"]
    else:
        assert "'nope' does not exist" in error_line(done.stderr)
    gone = cli("--store", str(store), "forget", "tea", cwd=store.parent)
    assert gone.returncode == EXIT_OK and gone.stdout == "forgot tea\n"


def _dump(tmp_path: Path, n: int = 300) -> Path:
    source = tmp_path / "source.mind"
    with embedmind.Store.open(source, embedder=HashingEmbedder()) as s:
        s.remember_many([f"memory number {i} about topic {i % 7}" for i in range(n)])
        path = tmp_path / "dump.jsonl"
        s.export_jsonl(path, include_vectors=True)
    return path


def test_no_progress_bars_into_a_pipe(tmp_path: Path) -> None:
    dump = _dump(tmp_path)
    done = cli("--store", "copy.mind", "--embedder", "hashing", "import", str(dump), cwd=tmp_path)
    assert done.returncode == EXIT_OK and done.stdout == "imported 300 memories\n", done.stderr
    assert done.stderr == ""  # no "\r", no bar, nothing
    again = cli("--store", "copy.mind", "--embedder", "hashing", "reembed", cwd=tmp_path)
    assert again.returncode == EXIT_OK and again.stderr == "", again.stderr


def _on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run the console script with stderr on a pseudo-terminal; return (code, stderr)."""
    leader, follower = pty.openpty()
    # A new pty is 0 columns wide, and tqdm draws an empty bar into it.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    child = subprocess.Popen(
        [EXE, *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return child.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def test_bars_on_a_terminal_unless_no_progress(tmp_path: Path) -> None:
    dump = _dump(tmp_path)
    base = ["--embedder", "hashing", "import", str(dump)]
    code, err = _on_a_terminal(["--store", "a.mind", *base], tmp_path)
    assert code == EXIT_OK and "\r" in err and "import: 300memory" in err, err
    for quiet in (["--no-progress"], ["--json"]):
        code, err = _on_a_terminal(["--store", "b.mind", *base, *quiet], tmp_path)
        assert code == EXIT_OK and err == "", err


def test_mcp_without_the_mcp_package_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # None in sys.modules makes every `import mcp` fail, as if it were not installed.
    hide = "import sys; sys.modules['mcp'] = None; from embedmind.cli.main import main; "
    done = subprocess.run(
        [sys.executable, "-c", hide + "sys.exit(main(sys.argv[1:]))", "mcp", "--store", "a.mind"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == EXIT_INVALID and done.stdout == ""
    line = error_line(done.stderr)
    assert 'pip install "embedmind[mcp]"' in line and 'pip install ".[mcp]"' in line
    assert list(tmp_path.iterdir()) == []


def test_reembed_missing_fills_memories_written_without_a_vector(store: Path) -> None:
    with embedmind.Store.open(store, embedder=None) as s:  # no model: no vectors
        s.remember("Carol collects vintage fountain pens", id="pens")
        assert s.stats().missing_vectors == 1
    done = cli("--store", str(store), "reembed", "--missing", "--json", cwd=store.parent)
    assert done.returncode == EXIT_OK and json.loads(done.stdout) == {"reembedded": 1}, done.stderr
    with embedmind.Store.open(store) as s:  # the recorded hashing model, kept
        assert s.stats().missing_vectors == 0
        assert s.recall("fountain pens", mode="vector", k=1).ids == ["pens"]
    again = cli("--store", str(store), "reembed", "--missing", cwd=store.parent)
    assert again.returncode == EXIT_OK and again.stdout == "re-embedded 0 memories\n"


def test_doctor_verify_names_a_damaged_memory_and_json_is_one_document(store: Path) -> None:
    with embedmind.Store.open(store) as s:
        s.remember("Bob keeps the spare key under the blue flowerpot", id="key")
    sound = cli("doctor", "--verify", "--store", str(store), "--json", cwd=store.parent)
    report = json.loads(sound.stdout)  # one JSON document, not the human text
    assert sound.returncode == EXIT_OK and report["ok"] is True, sound.stdout
    conn = apsw.Connection(str(store))
    conn.execute(
        "UPDATE memories SET content = 'Bob keeps the spare key under the red pot' WHERE id = 'key'"
    )
    conn.close()
    damaged = cli("--store", str(store), "doctor", "--verify", cwd=store.parent)
    assert damaged.returncode == EXIT_STORAGE and "key" in damaged.stdout, damaged.stdout
    missing = cli("doctor", "--verify", "--store", "nope.mind", cwd=store.parent)
    assert missing.returncode == EXIT_NOT_FOUND and not (store.parent / "nope.mind").exists()


def test_recall_temporal_moves_the_dated_memory_up(tmp_path: Path) -> None:
    path = tmp_path / "dated.mind"
    # Date words off (the CLI keeps an existing store's setting): with them "July"
    # would find t7 by text alone, and this checks what --temporal adds.
    with embedmind.Store.open(path, embedder=None, date_words=False) as s:
        for i, month in enumerate((1, 3, 7, 11)):
            s.remember(
                f"we went hiking together trip {i}",
                id=f"t{month}",
                created_at=dt.datetime(2023, month, 15, tzinfo=dt.timezone.utc),
            )
    query = ["--store", str(path), "--json", "recall", "where did we hike in July 2023?", "-k", "1"]
    plain = cli(*query, cwd=tmp_path)
    dated = cli(*query, "--temporal", cwd=tmp_path)
    assert plain.returncode == dated.returncode == EXIT_OK, (plain.stderr, dated.stderr)
    assert [h["memory"]["id"] for h in json.loads(dated.stdout)["hits"]] == ["t7"]
    assert json.loads(plain.stdout)["hits"][0]["memory"]["id"] != "t7"


@pytest.mark.parametrize("ttl", ["nan", "inf", "-inf", "1e300", "0", "-5"])
def test_remember_refuses_a_ttl_no_duration_holds_with_a_typed_reason(
    tmp_path: Path, ttl: str
) -> None:
    """``--ttl`` goes through the engine's check: exit 2 naming the flag, no traceback, nothing stored."""
    store = str(tmp_path / "t.mind")
    argv = ["--store", store, "--embedder", "hashing", "--no-progress"]
    done = main([*argv, "remember", "kept short", f"--ttl={ttl}"])
    assert done == EXIT_INVALID
    with embedmind.Store.open(store, embedder=HashingEmbedder(64)) as s:
        assert s.stats().live == 0
