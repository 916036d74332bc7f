"""``embedmind aliases``: driven through its module, and through the console entry once wired."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

import pytest

import embedmind
from embedmind.cli import aliases as cli_aliases
from embedmind.cli import global_options

cli_main = importlib.import_module("embedmind.cli.main")  # the package re-exports main()


def parser() -> argparse.ArgumentParser:
    """A parser with the global options and only the ``aliases`` command, as main builds it."""
    top = argparse.ArgumentParser(prog="embedmind")
    global_options.add(top, after_command=False)
    commands = top.add_subparsers(dest="command", required=True)
    cli_aliases.add_parser(commands, global_options.after_command())
    return top


def run(argv: list[str]) -> tuple[int, list[str]]:
    lines: list[str] = []
    args = parser().parse_args(argv)
    try:
        code = cli_main._dispatch(args.store, args, lines.append)
    except embedmind.errors.EmbedmindError as e:
        return cli_main._exit_code(e), [str(e)]
    return code, lines


def test_set_list_remove_through_the_module(tmp_path: Path) -> None:
    store = str(tmp_path / "s.mind")
    with embedmind.Store.open(store, embedder=None) as s:
        s.remember("I moved to NYC")
    assert run(["--store", store, "aliases", "set", "NYC", "new york"]) == (
        0, ["set 1 aliases; re-indexed 1 memories"],
    )  # fmt: skip
    table = tmp_path / "more.json"
    table.write_text(json.dumps({"bob": "robert", "LA": "los angeles"}))
    assert run(["--store", store, "aliases", "set", "--file", str(table)])[0] == 0
    assert run(["--store", store, "aliases", "list"]) == (
        0, ["bob -> robert", "LA -> los angeles", "NYC -> new york"],
    )  # fmt: skip
    code, lines = run(["--store", store, "aliases", "list", "--json"])
    assert json.loads(lines[0]) == {"bob": "robert", "LA": "los angeles", "NYC": "new york"}
    assert run(["--store", store, "aliases", "remove", "la", "nope", "--json"]) == (
        0, ['{"removed": 1}'],
    )  # fmt: skip
    with embedmind.Store.open(store, embedder=None) as s:
        assert [h.content for h in s.recall("new york", mode="text")] == ["I moved to NYC"]
    assert run(["--store", store, "aliases", "reindex"]) == (0, ["re-indexed 0 memories"])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["aliases", "set", "NYC"], "TARGET"),
        (["aliases", "set"], "KEY TARGET or --file"),
        (["aliases", "set", "the", "x"], "no index terms"),
    ],
)
def test_bad_input_exits_invalid_and_writes_nothing(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    store = str(tmp_path / "s.mind")
    embedmind.Store.open(store, embedder=None).close()
    code, lines = run(["--store", store, *argv])
    assert code == cli_main.EXIT_INVALID
    assert says in lines[0]
    with embedmind.Store.open(store, embedder=None) as s:
        assert s.aliases() == {}


def test_a_file_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    code, lines = run(["--store", str(tmp_path / "s.mind"), "aliases", "set", "--file", str(bad)])
    assert code == cli_main.EXIT_INVALID and "JSON object" in lines[0]


def test_list_refuses_a_missing_store(tmp_path: Path) -> None:
    code, _ = run(["--store", str(tmp_path / "none.mind"), "aliases", "list"])
    assert code == cli_main.EXIT_NOT_FOUND
    assert not (tmp_path / "none.mind").exists()


def test_the_embedmind_command_registers_it(tmp_path: Path) -> None:
    probe = cli_main.build_parser()
    commands = next(a for a in probe._actions if isinstance(a, argparse._SubParsersAction))
    assert "aliases" in commands.choices
    store = str(tmp_path / "s.mind")
    assert cli_main.main(["--store", store, "aliases", "set", "NYC", "new york"]) == 0
    assert cli_main.main(["--store", store, "aliases", "list"]) == 0
