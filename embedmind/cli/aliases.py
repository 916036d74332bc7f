"""``embedmind aliases set|list|remove|reindex``: the store's alias table from the shell.

``set`` takes one ``KEY TARGET`` pair, or many as a JSON object with
``--file`` (``-`` for standard input); ``--replace`` makes the table exactly
what is given. A change re-indexes the memories it affects, with a progress
bar on a terminal (the CLI's one decision, :func:`global_options.show_progress`).
The commands work on the file with no embedder: an alias changes postings,
never vectors, so no model is loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from embedmind.cli import global_options
from embedmind.errors import InvalidInputError

if TYPE_CHECKING:
    from embedmind.store import Store

Output = Callable[[str], None]


def add_parser(commands: Any, shared: argparse.ArgumentParser) -> None:
    """Register ``aliases`` and its actions on the CLI's subcommands.

    Args:
        commands: The ``add_subparsers()`` object of the ``embedmind`` parser.
        shared: The parent parser of the global options accepted after a command.
    """
    aliases = commands.add_parser(
        "aliases",
        parents=[shared],
        help="the store's alias table: 'NYC' also finds 'new york'",
        description="Manage the store's alias table (keys also find their targets' words).",
    )
    actions = aliases.add_subparsers(dest="aliases_action", required=True, metavar="ACTION")
    put = actions.add_parser(
        "set", parents=[shared], help="add or change aliases (re-indexes what they change)"
    )
    put.add_argument("key", nargs="?", help="e.g. NYC")
    put.add_argument("target", nargs="?", help="e.g. 'new york'")
    put.add_argument("--file", help="a JSON object of key to target; - for standard input")
    put.add_argument("--replace", action="store_true", help="make the table exactly this")
    put.set_defaults(run=_set, raw_path=True)
    show = actions.add_parser("list", parents=[shared], help="show the alias table")
    show.set_defaults(run=_list, raw_path=True, existing=True)
    drop = actions.add_parser("remove", parents=[shared], help="remove aliases by key")
    drop.add_argument("keys", nargs="+", metavar="KEY")
    drop.set_defaults(run=_remove, raw_path=True, existing=True)
    again = actions.add_parser(
        "reindex", parents=[shared], help="finish a re-index an interrupted change left"
    )
    again.set_defaults(run=_reindex, raw_path=True, existing=True)


def _open(path: str) -> Store:
    """The store, with no model (imported here: the parser is built for every command)."""
    from embedmind.store import Store

    return Store.open(path, embedder=None)


def _mapping(args: argparse.Namespace) -> dict[str, Any]:
    """The aliases the command line gives: a pair, or a JSON object from ``--file``."""
    pair = args.key is not None or args.target is not None
    if pair == (args.file is not None):
        raise InvalidInputError(
            "aliases", "give KEY TARGET or --file FILE (a JSON object), not both or neither"
        )
    if pair:
        if args.target is None:
            raise InvalidInputError("target", f"missing: embedmind aliases set {args.key} TARGET")
        return {args.key: args.target}
    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        value = json.loads(text)
    except OSError as e:
        raise InvalidInputError("--file", f"cannot read {args.file!r}: {e.strerror}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidInputError("--file", f"not a JSON object of key to target: {e}") from None
    if not isinstance(value, dict):
        raise InvalidInputError("--file", "expected a JSON object of key to target")
    return value


def _set(path: str, args: argparse.Namespace, out: Output) -> int:
    mapping = _mapping(args)
    with _open(path) as store:
        done = store.set_aliases(
            mapping, replace=args.replace, show_progress=global_options.show_progress(args)
        )
    if args.json:
        out(json.dumps({"set": len(mapping), "reindexed": done}))
    else:
        out(f"set {len(mapping)} aliases; re-indexed {done} memories")
    return 0


def _list(path: str, args: argparse.Namespace, out: Output) -> int:
    with _open(path) as store:
        table = store.aliases()
    if args.json:
        out(json.dumps(table, ensure_ascii=False))
    elif not table:
        out("no aliases")
    else:
        for key, target in table.items():
            out(f"{key} -> {target}")
    return 0


def _remove(path: str, args: argparse.Namespace, out: Output) -> int:
    with _open(path) as store:
        removed = store.remove_aliases(args.keys, show_progress=global_options.show_progress(args))
    out(json.dumps({"removed": removed}) if args.json else f"removed {removed} aliases")
    return 0


def _reindex(path: str, args: argparse.Namespace, out: Output) -> int:
    with _open(path) as store:
        done = store.reindex_aliases(show_progress=global_options.show_progress(args))
    out(json.dumps({"reindexed": done}) if args.json else f"re-indexed {done} memories")
    return 0
