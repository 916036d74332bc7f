"""The ``embedmind`` command line: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import importlib
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind import errors, plugins
from embedmind.cli.main import (
    EXIT_CONFLICT,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    build_parser,
    main,
)
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.errors import EmbedmindError
from embedmind.fragments import FragmentRecallError
from embedmind.hookspecs import hookimpl

cli_main = importlib.import_module("embedmind.cli.main")  # the package re-exports main()
ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_remember_recall_get_forget_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "cli.mind")
    code, out, _ = run(capsys, "--store", store, "--json", "remember", "Alice likes green tea",
                       "--id", "m1", "--metadata", '{"topic": "drinks"}', "--tag", "pref")  # fmt: skip
    assert code == EXIT_OK and json.loads(out)["id"] == "m1"
    code, out, _ = run(capsys, "--store", store, "--json", "recall", "green tea", "--mode", "text")
    hits = json.loads(out)["hits"]
    assert code == EXIT_OK and [h["memory"]["id"] for h in hits] == ["m1"]
    code, out, _ = run(capsys, "--store", store, "recall", "tea", "--where", '{"topic": "drinks"}')
    assert code == EXIT_OK and "m1" in out and "Alice likes green tea" in out
    code, out, _ = run(capsys, "--store", store, "get", "m1")
    assert code == EXIT_OK and "Alice likes green tea" in out
    code, out, _ = run(capsys, "--store", store, "--json", "stats")
    assert code == EXIT_OK and json.loads(out)["live"] == 1
    code, out, _ = run(capsys, "--store", store, "forget", "m1")
    assert code == EXIT_OK and "forgot m1" in out
    code, _, _ = run(capsys, "--store", store, "forget", "m1")
    assert code == EXIT_NOT_FOUND
    code, _, err = run(capsys, "--store", store, "get", "m1")
    assert code == EXIT_NOT_FOUND


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "cli.mind")
    for argv in (
        ["remember", "x", "--metadata", "{not json"],
        ["remember", "x", "--namespace", "a//b"],
        ["recall", "x", "--where", '{"a": {"$nope": 1}}'],
        ["recall", "x", "-k", "0"],
    ):
        code, out, err = run(capsys, "--store", store, *argv)
        assert code == EXIT_INVALID, argv
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_conflict_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "cli.mind")
    assert run(capsys, "--store", store, "remember", "x", "--id", "a", "--namespace", "n1")[0] == 0
    code, _, err = run(capsys, "--store", store, "remember", "y", "--id", "a", "--namespace", "n2")
    # The other namespace is not named (issue 14: it leaked tenants' names).
    assert code == EXIT_CONFLICT and err.startswith("error: ") and "n1" not in err


def test_demo_runs_as_a_console_script(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("embedmind")
    result = subprocess.run(
        [str(exe), "demo"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "beagle named Biscuit" in result.stdout
    assert "cello" in result.stdout
    assert not list(tmp_path.iterdir()), "demo must not leave files behind"


def test_vacuum_export_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, copy = str(tmp_path / "a.mind"), str(tmp_path / "b.mind")
    dump = str(tmp_path / "dump.jsonl")
    run(capsys, "--store", store, "remember", "keep me", "--id", "k")
    run(capsys, "--store", store, "remember", "drop me", "--id", "d")
    run(capsys, "--store", store, "forget", "d")
    code, out, _ = run(capsys, "--store", store, "--json", "vacuum")
    assert code == EXIT_OK and json.loads(out)["removed"] == 1
    code, out, _ = run(capsys, "--store", store, "export", dump, "--vectors")
    assert code == EXIT_OK and "exported 1" in out
    code, out, _ = run(capsys, "--store", copy, "import", dump)
    assert code == EXIT_OK and "imported 1" in out
    code, out, _ = run(capsys, "--store", copy, "get", "k")
    assert code == EXIT_OK and "keep me" in out


@pytest.fixture
def toy_embedder() -> Iterator[str]:
    """A second registered embedder ("toy-32"), so two cheap models can disagree."""

    class Toy:
        @hookimpl
        def register_embedders(self, register: Any) -> None:
            register("toy-32", lambda: HashingEmbedder(32))

    plugin = Toy()
    plugins.register(plugin)
    yield "toy-32"
    plugins.unregister(plugin)


def _error_line(err: str) -> str:
    """The one ``error:`` line on stderr (progress bars may precede it), never a traceback."""
    assert "Traceback" not in err, err
    errors_seen = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors_seen) == 1 and err.endswith(errors_seen[0] + "\n"), err
    return errors_seen[0]


def _suggested(message: str) -> list[str]:
    """The command line a message suggests (between backticks), split as a shell would."""
    commands = re.findall(r"`(embedmind [^`]+)`", message)
    assert len(commands) == 1, message
    argv = shlex.split(commands[0])
    assert argv[0] == "embedmind"
    return argv[1:]


def test_mismatch_suggests_a_reembed_command_that_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toy_embedder: str
) -> None:
    store = str(tmp_path / "my store.mind")  # a space: the command must quote it
    with embedmind.Store.open(store, embedder="hashing") as s:
        s.remember("red apples", id="a")
    code, _, err = run(capsys, "--store", store, "--embedder", toy_embedder, "get", "a")
    assert code == EXIT_INVALID and err.startswith("error: ") and err.count("\n") == 1, err
    argv = _suggested(err)
    args = build_parser().parse_args(argv)
    assert (args.command, args.store, args.embedder) == ("reembed", store, toy_embedder)
    code, out, err = run(capsys, *argv)
    assert code == EXIT_OK and "re-embedded 1" in out, err
    code, out, _ = run(capsys, "--store", store, "--embedder", toy_embedder, "get", "a")
    assert code == EXIT_OK and "red apples" in out
    with embedmind.Store.open(store, embedder=toy_embedder) as reopened:
        assert reopened.embedder is not None and reopened.embedder.dims == 32


def test_mismatch_with_an_unregistered_embedder_points_to_python(tmp_path: Path) -> None:
    store = tmp_path / "s.mind"
    embedmind.Store.open(store, embedder="hashing").close()
    with pytest.raises(embedmind.EmbedderMismatchError) as caught:
        embedmind.Store.open(store, embedder=HashingEmbedder(16))  # no registered name
    assert "embedmind --store" not in str(caught.value)
    assert "embedmind.reembed(" in str(caught.value)


def test_import_mismatch_names_both_files_and_suggests_import_reembed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toy_embedder: str
) -> None:
    source, target = str(tmp_path / "a.mind"), str(tmp_path / "b b.mind")
    dump = str(tmp_path / "dump file.jsonl")
    run(capsys, "--store", source, "--embedder", "hashing", "remember", "red apples", "--id", "a")
    assert run(capsys, "--store", source, "export", dump, "--vectors")[0] == EXIT_OK
    # toy-32's model id is "hashing-32", not a registered name: reopening the
    # store needs --embedder again, so the suggested command must carry it.
    code, _, err = run(capsys, "--store", target, "--embedder", toy_embedder, "import", dump)
    err = _error_line(err)
    assert code == EXIT_INVALID, err
    assert "import file" not in err and dump in err
    argv = _suggested(err)
    args = build_parser().parse_args(argv)
    assert (args.command, args.store, args.file, args.reembed) == ("import", target, dump, True)
    assert args.embedder == toy_embedder
    code, out, err = run(capsys, *argv)
    assert code == EXIT_OK and "imported 1" in out, err
    with (
        embedmind.Store.open(target, embedder=toy_embedder) as s,
        embedmind.Store.open(tmp_path / "c.mind", embedder=toy_embedder) as other,
    ):
        assert s.get("a") is not None
        with pytest.raises(embedmind.EmbedderMismatchError) as caught:
            other.import_jsonl(dump)  # the Python API: the fix is reembed=True
    message = str(caught.value)
    assert "<import file>" not in message and "reembed=True" in message
    assert other.path in message


def _instances() -> list[EmbedmindError]:
    identity = {"model_id": "m", "dims": "8", "metric": "cos", "fingerprint": "f"}
    return [
        EmbedmindError("base"),
        errors.InvalidInputError("field", "bad"),
        errors.InvalidFilterError("where", "bad"),
        errors.FilterTypeError("k", "$gt", "bad"),
        errors.NotFoundError("x"),
        errors.ConflictError("x", "clash"),
        errors.StorageError("disk"),
        errors.StoreBusyError("p", 1.0),
        errors.DamagedRecordError(["x"], "content no longer matches its fingerprint"),
        errors.RedactionIncompleteError("x", "a reader holds a snapshot", 5.0),
        errors.SchemaVersionError("p", 9, 4),
        errors.StoreClosedError("closed"),
        errors.EmbedderError("broke"),
        errors.EmbedderMismatchError("p", identity, identity),
        FragmentRecallError("fragments"),
    ]


def test_every_error_type_is_covered_here() -> None:
    types = {type(e) for e in _instances()}
    declared = {
        t for t in vars(errors).values() if isinstance(t, type) and issubclass(t, EmbedmindError)
    }
    assert declared <= types


def _documented_codes() -> dict[str, int]:
    text = (ROOT / "docs" / "reference" / "errors.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|.*\| (\d) \|$", text, flags=re.MULTILINE)
    return {name: int(code) for name, code in rows}


@pytest.mark.parametrize("error", _instances(), ids=lambda e: type(e).__name__)
def test_each_error_exits_with_its_documented_code_in_one_line(
    error: EmbedmindError,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    documented = _documented_codes()
    assert type(error).__name__ in documented, "document it in docs/reference/errors.md"

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    store = tmp_path / "s.mind"
    embedmind.Store.open(store, embedder="hashing").close()  # stats never creates a store
    monkeypatch.setattr(embedmind.Store, "stats", fail)
    code, _, err = run(capsys, "--store", str(store), "stats")
    assert code == documented[type(error).__name__]
    assert err == f"error: {error}\n"


def test_exit_codes_agree_between_docstring_and_docs() -> None:
    doc = cli_main.__doc__ or ""
    in_docstring = {int(c) for c in re.findall(r"^(\d)\s{2,}", doc, flags=re.MULTILINE)}
    errors_md = (ROOT / "docs" / "reference" / "errors.md").read_text()
    table = errors_md.split("## CLI exit codes")[1].split("\n## ")[0]
    in_docs = {int(c) for c in re.findall(r"^\| (\d) \|", table, flags=re.MULTILINE)}
    assert in_docstring == in_docs == {0, 1, 2, 3, 4, 5}
    assert cli_main.EXIT_SKIPPED == 5
    cli_md = " ".join((ROOT / "docs" / "reference" / "cli.md").read_text().split())
    meanings = ["success", "not found", "invalid input or usage", "conflict"]
    meanings += ["storage failure", "benchmark skipped"]
    assert ", ".join(f"{code} {meaning}" for code, meaning in enumerate(meanings)) in cli_md


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "{tmp}/missing-dir/dump.jsonl"],
        ["export", "{tmp}"],
        ["import", "{tmp}/missing.jsonl"],
        ["import", "{tmp}"],
        ["import", "{tmp}/not-json.jsonl"],
        ["import", "{tmp}/binary.jsonl"],
    ],
    ids=["export-missing-dir", "export-dir", "import-missing", "import-dir", "not-json", "binary"],
)
def test_bad_export_import_paths_are_one_line_and_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "s.mind")
    dump = tmp_path / "good.jsonl"
    assert run(capsys, "--store", store, "remember", "keep", "--id", "k")[0] == EXIT_OK
    assert run(capsys, "--store", store, "export", str(dump))[0] == EXIT_OK
    header, memory = dump.read_text().splitlines()[:2]
    (tmp_path / "not-json.jsonl").write_text(f"{header}\n{memory}\n\n{{oops\n")
    (tmp_path / "binary.jsonl").write_bytes(header.encode() + b"\n\xff\xfe\x00junk\n")
    given = [a.format(tmp=tmp_path) for a in argv]
    # --no-progress: no progress bar (the engine's bar is drawn on stderr as well).
    code, _, err = run(capsys, "--store", store, "--no-progress", *given)
    err = _error_line(err)
    assert code == EXIT_INVALID, err
    if argv[1].endswith(("not-json.jsonl", "binary.jsonl")):
        assert f"line {4 if 'not-json' in argv[1] else 2}" in err  # blank lines count too
    else:
        assert given[1] in err


def test_reembed_honours_the_global_embedder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toy_embedder: str
) -> None:
    store = str(tmp_path / "s.mind")
    run(capsys, "--store", store, "--embedder", "hashing", "remember", "red apples")
    code, out, err = run(capsys, "--store", store, "--embedder", toy_embedder, "--json", "reembed")
    assert code == EXIT_OK and json.loads(out) == {"reembedded": 1}, err
    with embedmind.Store.open(store, embedder=toy_embedder) as s:  # the new model is recorded
        assert s.embedder is not None and s.embedder.model_id == "hashing-32"
    code, _, err = run(capsys, "--store", store, "--embedder", "nope", "reembed")
    assert code == EXIT_INVALID and "no embedder named 'nope'" in err


def test_reembed_refuses_fragments_given_as_vectors_unless_told_to_drop_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toy_embedder: str
) -> None:
    store = str(tmp_path / "s.mind")
    with embedmind.Store.open(store, embedder="hashing") as s:
        s.remember("Tea grows in Assam.", id="crops")
        s.fragments.put("crops", [((0, 19), "Tea grows in Assam.")])
        s.remember("a scanned page", id="scan")
        s.fragments.put("scan", [((0, 1), [1.0] + [0.0] * 63)])  # a vector: no text
    argv = ["--store", store, "--embedder", toy_embedder, "--json", "reembed"]
    code, out, err = run(capsys, *argv)
    error = json.loads(err)["error"]  # with --json the error is one JSON object
    assert code == EXIT_CONFLICT and out == "" and error["type"] == "ConflictError", err
    message = error["message"]
    assert "1 fragment(s) of 1 record(s) ('scan')" in message
    assert "--drop-vector-fragments" in message
    with embedmind.Store.open(store, embedder="hashing") as s:  # nothing changed
        assert s.stats().embedder == "hashing-64" and s.fragments.fragment_count == 2
    code, out, err = run(capsys, *argv, "--drop-vector-fragments")
    assert code == EXIT_OK and json.loads(out) == {"reembedded": 2}, err
    with embedmind.Store.open(store, embedder=toy_embedder) as s:
        assert s.stats().embedder == "hashing-32"
        assert s.fragments.fragment_count == 1  # the text fragment, re-embedded
        assert s.fragments.query("tea", k=1)[0].record_id == "crops"


def test_export_to_stdout_pipes_into_import_from_stdin(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "embedmind.cli.main", "--embedder", "hashing"]
    with embedmind.Store.open(tmp_path / "a.mind", embedder=HashingEmbedder()) as store:
        store.remember_many([f"piped memory {i}" for i in range(30)])
    exported = subprocess.run(
        [*cli, "--store", str(tmp_path / "a.mind"), "export", "-"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "exported 30 memories" in exported.stderr  # the summary stays off the data
    imported = subprocess.run(
        [*cli, "--store", str(tmp_path / "b.mind"), "import", "-"],
        input=exported.stdout, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "imported 30 memories" in imported.stdout
    with embedmind.Store.open(tmp_path / "b.mind", embedder=HashingEmbedder()) as store:
        assert store.stats().live == 30


def test_recall_widen_and_latest_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "flags.mind")
    for content in ("Bob lives in Paris; Bob lives well", "Bob lives in Rome"):
        assert run(capsys, "--store", store, "remember", content)[0] == EXIT_OK
    query = "where does bob live now?"
    code, out, _ = run(capsys, "--store", store, "--json", "recall", query, "--mode", "text")
    assert code == EXIT_OK
    assert json.loads(out)["hits"][0]["memory"]["content"].startswith("Bob lives in Paris")
    code, out, _ = run(capsys, "--store", store, "--json", "recall", query, "--mode", "text",
                       "--latest")  # fmt: skip
    hits = json.loads(out)["hits"]
    assert code == EXIT_OK and hits[0]["memory"]["content"] == "Bob lives in Rome"
    assert "latest" in hits[0]["channels"]
    code, out, _ = run(capsys, "--store", store, "--json", "recall", "bob rome", "--widen")
    assert code == EXIT_OK and json.loads(out)["hits"]
