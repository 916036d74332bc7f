"""The options every ``embedmind`` command takes, before or after its name.

``embedmind --store a.mind mcp`` and ``embedmind mcp --store a.mind`` mean
the same. After the command the options default to ``argparse.SUPPRESS``:
argparse copies a subcommand's values over the main parser's, so a real
default there would clobber a value given before the command. Given in both
places, the one after the command wins, as a repeated option does.

Whether a progress bar is drawn is decided here, once, for every command:
bars go to standard error, and only to a terminal. Whether ``--store`` names
an existing store, for the commands that only read one, is checked here too.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO

from embedmind.backend.locations import masked
from embedmind.errors import NotFoundError

DEFAULT_STORE = "memories.mind"
DEFAULT_EMBEDDER = "default"
"""``embedmind.embedders.adapt.DEFAULT``, spelled here: that module loads numpy, and
``--help`` must not (``tests/test_cli_startup.py`` pins the two equal)."""


def add(parser: argparse.ArgumentParser, *, after_command: bool) -> None:
    """Add ``--store``, ``--json``, ``--embedder`` and ``--no-progress`` to ``parser``.

    Args:
        parser: The main parser, or the parent parser of every command.
        after_command: True for the commands' copy: no defaults of its own.
    """

    def default(value: object) -> object:
        return argparse.SUPPRESS if after_command else value

    parser.add_argument(
        "--store",
        default=default(os.environ.get("EMBEDMIND_STORE", DEFAULT_STORE)),
        help="store file (default: $EMBEDMIND_STORE or ./memories.mind)",
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print JSON for scripts"
    )
    parser.add_argument(
        "--embedder",
        default=default(DEFAULT_EMBEDDER),
        help="a registered embedder name: the model of a new store, or reembed's target "
        "(default: the store's recorded model; for reembed, the built-in one)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        default=default(False),
        help="never draw progress bars (they are drawn only when stderr is a terminal)",
    )


def after_command() -> argparse.ArgumentParser:
    """The parent parser that gives every command the global options."""
    parent = argparse.ArgumentParser(add_help=False)
    add(parent, after_command=True)
    return parent


def show_progress(args: argparse.Namespace, stream: IO[str] | None = None) -> bool:
    """Whether to draw progress bars: never for ``--json`` or ``--no-progress``, nor into a pipe.

    Bars are redrawn with carriage returns; in a pipe or a log file they
    pile up as noise (``embedmind bench > log 2>&1`` filled files with them).

    Args:
        args: The parsed command line.
        stream: Where bars are drawn (default: standard error, as tqdm does).

    Returns:
        True only when ``stream`` is a terminal and nothing asked for quiet.
    """
    if args.json or args.no_progress:
        return False
    target = sys.stderr if stream is None else stream
    isatty = getattr(target, "isatty", None)
    return bool(isatty is not None and isatty())


def require_store(path: str) -> None:
    """Refuse to read a store that is not there: opening would create an empty one.

    Raises:
        NotFoundError: When no store is at ``path`` (its backend says; ``:memory:``
            always is).
        InvalidInputError: When ``path`` is not a usable store location, or a
            URL no installed backend serves.
    """
    from embedmind import plugins  # loads the plugins: only a command that opens a store

    if plugins.backend_for(path).exists(path):
        return
    shown = masked(path)  # a connection string's password is never printed
    error = NotFoundError(shown, what="store")
    # NotFoundError's wording ("or was forgotten") is about memories; a store
    # path needs the fix instead.
    error.args = (
        f"store {shown!r} does not exist: check --store or $EMBEDMIND_STORE "
        "(only remember, import and mcp create a store)",
    )
    raise error
