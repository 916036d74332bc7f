"""The CLI in pipes and scripts (issue 52): standard input, a closed reader, JSON errors,
``list``, ``export`` over an existing file, and which commands load the model.

The exit codes and the one-line errors are ``embedmind.cli.main``'s table.
Pipes are real ones, through the console script in a child process.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind import plugins
from embedmind.cli.main import (
    EXIT_BROKEN_PIPE,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    main,
)
from embedmind.cli.render import jsonable
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.hookspecs import hookimpl

EXE = str(Path(sys.executable).with_name("embedmind"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stdin_of(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """Standard input as a pipe gives it: bytes under a text layer, not a terminal."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


# -- remember from standard input -------------------------------------------------


@pytest.mark.parametrize("text_arg", [["-"], []], ids=["dash", "no-text"])
@pytest.mark.parametrize(
    "piped",
    ["Alice likes green tea\n", "-\n", "two\nlines\r\n\n", "naïve café ☕", "  spaced  \n"],
)
def test_remember_reads_standard_input(
    text_arg: list[str],
    piped: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = str(tmp_path / "s.mind")
    stdin_of(monkeypatch, piped.encode())
    code, out, err = run(capsys, "--store", store, "--embedder", "hashing", "--json",
                         "remember", *text_arg, "--id", "m")  # fmt: skip
    assert code == EXIT_OK, err
    expected = piped.rstrip("\r\n")  # what $(...) keeps: no trailing line breaks
    assert json.loads(out)["content"] == expected
    with embedmind.Store.open(store, embedder=None) as s:
        got = s.get("m")
        assert got is not None and got.content == expected


def test_a_given_text_wins_over_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin_of(monkeypatch, b"from the pipe\n")
    store = str(tmp_path / "s.mind")
    code, out, _ = run(capsys, "--store", store, "--embedder", "hashing", "--json",
                       "remember", "from the argument")  # fmt: skip
    assert code == EXIT_OK and json.loads(out)["content"] == "from the argument"


def test_remember_from_a_real_pipe(tmp_path: Path) -> None:
    done = subprocess.run(
        [EXE, "--store", "s.mind", "--embedder", "hashing", "--json", "remember"],
        input="Bob drinks his coffee black\n", capture_output=True, text=True, cwd=tmp_path,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == EXIT_OK, done.stderr
    assert json.loads(done.stdout)["content"] == "Bob drinks his coffee black"


def test_remember_without_text_on_a_terminal_is_a_usage_error(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [EXE, "--store", "s.mind", "--embedder", "hashing", "remember"],
            stdin=follower, capture_output=True, text=True, cwd=tmp_path, timeout=120,
        )  # fmt: skip
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == EXIT_INVALID and done.stdout == ""
    assert done.stderr.startswith("error: text: missing") and "echo TEXT |" in done.stderr
    assert list(tmp_path.iterdir()) == [], "a refused remember created the store"


def test_standard_input_that_is_not_utf8_is_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin_of(monkeypatch, b"caf\xe9\n")
    code, out, err = run(capsys, "--store", str(tmp_path / "s.mind"), "remember", "-")
    assert code == EXIT_INVALID and out == "" and err.startswith("error: text: ")
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


# -- a reader that stops early -----------------------------------------------------


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose list, recall and export each print far more than a pipe buffers."""
    path = tmp_path_factory.mktemp("big") / "big.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder()) as s:
        s.remember_many([f"note {i} about tea " + "padding " * 100 for i in range(1000)])
    return path


@pytest.mark.parametrize(
    "argv",
    [["list"], ["--json", "list"], ["recall", "tea", "-k", "120"], ["export", "-"]],
    ids=["list", "list-json", "recall", "export"],
)
def test_a_closed_reader_ends_the_command_quietly(argv: list[str], big_store: Path) -> None:
    with subprocess.Popen(
        [EXE, "--store", str(big_store), "--no-progress", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    ) as child:  # fmt: skip
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.read(200)  # `| head -c 200`: read a little, then hang up
        child.stdout.close()
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert code == EXIT_BROKEN_PIPE and err == "", err


# -- --json errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "kind", "code"),
    [
        (["get", "nope"], "NotFoundError", EXIT_NOT_FOUND),
        (["forget", "nope"], "NotFoundError", EXIT_NOT_FOUND),
        (["--store", "{tmp}/typo.mind", "stats"], "NotFoundError", EXIT_NOT_FOUND),
        (["remember", "x", "--metadata", "{no"], "InvalidInputError", EXIT_INVALID),
        (["recall", "x", "--where", '{"a": {"$nope": 1}}'], "InvalidFilterError", EXIT_INVALID),
        (["recall", "x", "-k", "0"], "InvalidInputError", EXIT_INVALID),
        (["list", "--limit", "-1"], "InvalidInputError", EXIT_INVALID),
    ],
)
def test_json_errors_are_one_json_object_with_the_same_message_and_code(
    argv: list[str], kind: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "s.mind")
    embedmind.Store.open(store, embedder="hashing").close()
    given = ["--store", store, *(a.replace("{tmp}", str(tmp_path)) for a in argv)]
    plain = run(capsys, *given)
    as_json = run(capsys, *given, "--json")
    assert plain[0] == as_json[0] == code and plain[1] == as_json[1] == ""
    assert as_json[2].count("\n") == 1, as_json[2]
    error = json.loads(as_json[2])["error"]
    assert error["type"] == kind
    assert plain[2] == f"error: {error['message']}\n"  # the same message, as text


@pytest.mark.parametrize(
    "argv", [["--json", "get"], ["get", "--json"], ["--json", "recall", "q", "-k", "many"]]
)
def test_json_usage_errors_are_json_too(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run([EXE, *argv], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)  # fmt: skip
    assert done.returncode == EXIT_INVALID and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["type"] == "UsageError" and "--help" in error["message"]
    plain = subprocess.run([EXE, *(a for a in argv if a != "--json")], capture_output=True,
                           text=True, cwd=tmp_path, timeout=120)  # fmt: skip
    assert plain.returncode == EXIT_INVALID and "usage: embedmind" in plain.stderr


def test_benchs_own_json_option_is_not_the_global_one(tmp_path: Path) -> None:
    # `bench ... --json PATH` names the figures file: its usage errors stay text.
    done = subprocess.run([EXE, "bench", "vector", "--json"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.returncode == EXIT_INVALID and "bench" in done.stderr  # installed or not
    assert not done.stderr.startswith("{"), done.stderr


# -- export over an existing file ----------------------------------------------------


def test_export_refuses_an_existing_file_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "s.mind")
    with embedmind.Store.open(store, embedder="hashing") as s:
        s.remember("Alice likes green tea", id="tea")
    backup = tmp_path / "backup.jsonl"
    backup.write_text("yesterday's backup\n")
    code, out, err = run(capsys, "--store", store, "export", str(backup))
    assert code == EXIT_INVALID and out == "" and "--force" in err and err.count("\n") == 1
    assert backup.read_text() == "yesterday's backup\n", "the refused export wrote"
    code, out, err = run(capsys, "--store", store, "export", str(backup), "--force")
    assert code == EXIT_OK and "exported 1" in out, err
    assert '"id": "tea"' in backup.read_text() or '"id":"tea"' in backup.read_text()
    assert run(capsys, "--store", store, "export", str(tmp_path / "new.jsonl"))[0] == EXIT_OK


# -- list --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[embedmind.Memory]]:
    """A store of 12 memories in three namespaces, each written a minute after the last."""
    path = str(tmp_path_factory.mktemp("dated") / "dated.mind")
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    namespaces = ["user/alice", "user/bob", "team"]
    with embedmind.Store.open(path, embedder="hashing") as s:
        for i in range(12):
            s.remember(f"memory {i}\nwith a second line", id=f"m{i:02}",
                       namespace=namespaces[i % 3], created_at=start + dt.timedelta(minutes=i))  # fmt: skip
        s.forget("m04")  # a forgotten memory is not listed
        every = list(s.iter())
    return path, every


def _in(memory: embedmind.Memory, scope: list[str]) -> bool:
    return not scope or any(
        memory.namespace == ns or (ns.endswith("/*") and memory.namespace.startswith(ns[:-1]))
        for ns in scope
    )


@pytest.mark.parametrize("scope", [[], ["user/*"], ["team", "user/bob"]], ids=str)
@pytest.mark.parametrize(
    ("offset", "limit", "newest"),
    [(0, None, False), (0, 3, False), (2, 3, False), (0, 2, True), (3, 100, True), (50, 5, False)],
)
def test_list_pages_a_scope_by_created_at(
    scope: list[str],
    offset: int,
    limit: int | None,
    newest: bool,
    dated: tuple[str, list[embedmind.Memory]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, every = dated
    argv = ["--store", path, "--json", "list", "--offset", str(offset)]
    argv += [a for ns in scope for a in ("--namespace", ns)]
    argv += [] if limit is None else ["--limit", str(limit)]
    argv += ["--newest"] * newest
    code, out, err = run(capsys, *argv)
    assert code == EXIT_OK, err
    ordered = [m for m in every if _in(m, scope)]  # the oracle: filter, order, slice
    ordered = ordered[::-1] if newest else ordered
    expected = ordered[offset : None if limit is None else offset + limit]
    assert [json.loads(line) for line in out.splitlines()] == [jsonable(m) for m in expected]


def test_list_lines_for_people(
    dated: tuple[str, list[embedmind.Memory]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, every = dated
    code, out, _ = run(capsys, "--store", path, "list", "--namespace", "team", "--limit", "1")
    assert code == EXIT_OK
    assert out == "m02  2026-01-01T00:02:00+00:00  [team]  memory 2 with a second line\n"
    assert every[0].id == "m00"


# -- which commands load the model ------------------------------------------------


@pytest.fixture
def counted() -> Iterator[list[int]]:
    """A registered embedder, named by its model id ``hashing-48``, whose loads are counted."""
    loads: list[int] = []

    def load() -> HashingEmbedder:
        loads.append(1)
        return HashingEmbedder(48)

    class Counted:
        @hookimpl
        def register_embedders(self, register: Any) -> None:
            register("hashing-48", load)

    plugin = Counted()
    plugins.register(plugin)
    yield loads
    plugins.unregister(plugin)


@pytest.mark.parametrize(
    ("argv", "loads_model"),
    [
        (["get", "tea"], False),
        (["list"], False),
        (["stats"], False),
        (["export", "{tmp}/out.jsonl"], False),
        (["recall", "tea"], True),
        (["remember", "more tea"], True),
        (["--embedder", "hashing-48", "get", "tea"], True),  # named: opened with it, checked
    ],
)
def test_only_the_commands_that_embed_load_the_model(
    argv: list[str],
    loads_model: bool,
    counted: list[int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = str(tmp_path / "s.mind")
    with embedmind.Store.open(store, embedder="hashing-48") as s:
        s.remember("Alice likes green tea", id="tea")
    counted.clear()
    code, _, err = run(capsys, "--store", store, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert code == EXIT_OK, err
    assert bool(counted) is loads_model
    with embedmind.Store.open(store) as s:  # the recorded model, kept
        assert s.stats().embedder == "hashing-48"
        assert s.recall("green tea", mode="vector", k=1).ids == ["tea"]
