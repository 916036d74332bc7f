"""``embedmind``: remember, recall, list, get, forget, stats and demo from the shell.

Output is for people by default and JSON with ``--json``. Every embedmind
error ends in one line on stderr, ``error: <message>`` (with ``--json``, one
JSON object, ``{"error": {"type": ..., "message": ...}}``), and an exit code:

====  ==========================================================
0     success
1     not found (``get`` or ``forget`` of a missing id, a read command's
      missing store, ``NotFoundError``)
2     invalid input or usage (a one-line message says which field; also a
      store opened with another embedder, and an export or import file
      that cannot be read, written or parsed)
3     conflict (an id reused in another namespace)
4     storage failure (busy store, newer schema, I/O) and any other
      embedmind error
5     ``embedmind bench`` only: the workload was skipped (it cannot run here)
141   standard output was closed early (``embedmind list | head -1``): the
      command stops quietly, as a program killed by SIGPIPE does (128 + 13)
====  ==========================================================

This module builds the parser and runs a command; the commands themselves
live in :mod:`~embedmind.cli.memories` and :mod:`~embedmind.cli.upkeep`, and
are imported only when they run, so ``--help``, ``--version`` and a usage
error load neither numpy, the model, a backend nor the plugins.
"""

from __future__ import annotations

import argparse
import contextvars
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from embedmind.cli import aliases, bench_seam, global_options
from embedmind.errors import (
    ConflictError,
    EmbedderMismatchError,
    EmbedmindError,
    FilterTypeError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)

EXIT_OK, EXIT_NOT_FOUND, EXIT_INVALID, EXIT_CONFLICT, EXIT_STORAGE = 0, 1, 2, 3, 4
EXIT_SKIPPED = bench_seam.EXIT_SKIPPED
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for ``cat`` or ``grep`` cut off by ``head``."""
DEFAULT_STORE = global_options.DEFAULT_STORE

# The first matching row wins; rows for subclasses come before their bases.
# An EmbedderMismatchError is a usage error: nothing is broken, the command
# needs another --embedder, a reembed, or import --reembed.
_EXIT_CODES: tuple[tuple[type[EmbedmindError], int], ...] = (
    (NotFoundError, EXIT_NOT_FOUND),
    (InvalidInputError, EXIT_INVALID),
    (FilterTypeError, EXIT_INVALID),
    (EmbedderMismatchError, EXIT_INVALID),
    (ConflictError, EXIT_CONFLICT),
    (StorageError, EXIT_STORAGE),
    (EmbedmindError, EXIT_STORAGE),
)

Output = Callable[[str], None]

# Whether a usage error is printed as JSON: set by main() while it parses.
_JSON_USAGE: contextvars.ContextVar[bool] = contextvars.ContextVar("json_usage", default=False)


def _exit_code(error: EmbedmindError) -> int:
    """The documented exit code of an embedmind error (see docs/reference/errors.md)."""
    return next(code for kind, code in _EXIT_CODES if isinstance(error, kind))


def print_error(kind: str, message: str, *, as_json: bool) -> None:
    """Print one error on stderr: ``error: <message>``, or with ``as_json`` one JSON object.

    Args:
        kind: The error's type name (``NotFoundError``; ``UsageError`` for argparse's).
        message: The one-line message.
        as_json: Print ``{"error": {"type": kind, "message": message}}`` instead.
    """
    if as_json:
        line = json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False)
    else:
        line = f"error: {message}"
    print(line, file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as JSON when the command line has ``--json``."""

    def error(self, message: str) -> NoReturn:
        if not _JSON_USAGE.get():
            super().error(message)
        print_error("UsageError", f"{message} (see `{self.prog} --help`)", as_json=True)
        self.exit(EXIT_INVALID)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, read only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        del kwargs
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("embedmind")
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            import embedmind

            number = embedmind.__version__
        print(f"embedmind {number}")
        parser.exit(EXIT_OK)


def _lazy(module: str, name: str) -> Callable[..., int]:
    """The command ``module.name``, imported when it runs (the parser alone loads no engine)."""

    def run(*args: Any) -> int:
        command: Callable[..., int] = getattr(importlib.import_module(module), name)
        return command(*args)

    return run


def _memories(name: str) -> Callable[..., int]:
    return _lazy("embedmind.cli.memories", name)


def _upkeep(name: str) -> Callable[..., int]:
    return _lazy("embedmind.cli.upkeep", name)


def _add_memory_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """``remember``, ``recall``, ``list``, ``get``, ``forget`` and ``stats``."""
    remember = command("remember", help="store one memory (TEXT, or - for standard input)")
    remember.add_argument(
        "text", nargs="?", help="the content; - or none (with a pipe) reads standard input"
    )
    remember.add_argument("--id")
    remember.add_argument("--namespace", default="default")
    remember.add_argument("--metadata", help="a JSON object")
    remember.add_argument("--tag", action="append", help="repeat for several tags")
    remember.add_argument("--tier", default="semantic")
    remember.add_argument("--agent", default="cli")
    remember.add_argument("--session")
    remember.add_argument("--ttl", type=float, help="time to live in seconds")
    remember.set_defaults(
        run=_memories("remember"), prepare=_memories("read_text"), needs_model=True
    )

    recall = command("recall", help="recall memories matching a query")
    recall.add_argument("query")
    recall.add_argument("-k", type=int, default=8)
    recall.add_argument("--namespace", action="append", help="'a/b', 'a/b/*'; repeatable")
    recall.add_argument("--where", help='a JSON filter, e.g. \'{"topic": "drinks"}\'')
    recall.add_argument("--mode", default="hybrid", choices=["hybrid", "vector", "text"])
    recall.add_argument("--explain", action="store_true")
    recall.add_argument(
        "--temporal",
        action="store_true",
        help="move memories written near a date the query names up (e.g. 'in May 2023')",
    )
    recall.add_argument(
        "--widen",
        action="store_true",
        help="also consider memories matching the query's rarest words alone (hybrid mode)",
    )
    recall.add_argument(
        "--latest",
        action="store_true",
        help="newest first among the best hits when the query asks for a current value ('now')",
    )
    recall.add_argument(
        "--min-score",
        type=float,
        help="drop hits whose score (the estimated probability of relevance, 0-1) is below this",
    )
    recall.set_defaults(run=_memories("recall"), existing=True, needs_model=True)

    listing = command("list", help="list memories, oldest first")
    listing.add_argument("--namespace", action="append", help="'a/b', 'a/b/*'; repeatable")
    listing.add_argument("--where", help="a JSON filter, as for recall")
    listing.add_argument("--limit", type=int, help="at most N memories (default: all)")
    listing.add_argument("--offset", type=int, default=0, help="skip the first N (paging)")
    listing.add_argument("--newest", action="store_true", help="newest first")
    listing.set_defaults(run=_memories("listing"), existing=True)

    sub = command("get", help="show one memory")
    sub.add_argument("id")
    sub.set_defaults(run=_memories("get"), existing=True)
    sub = command("forget", help="tombstone one memory")
    sub.add_argument("id")
    sub.set_defaults(run=_memories("forget"), existing=True, needs_model=True)
    command("stats", help="counts and sizes").set_defaults(run=_memories("stats"), existing=True)


def _add_upkeep_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """``reembed``, ``vacuum``, ``doctor``, ``mcp``, ``export``, ``import`` and ``demo``."""
    again = command(
        "reembed",
        help="re-embed every memory and fragment with --embedder "
        "(default: the built-in model; resumable)",
    )
    again.add_argument("--batch-size", type=int, default=256)
    again.add_argument(
        "--drop-vector-fragments",
        action="store_true",
        help="drop the fragments given as vectors (no text to embed) instead of refusing",
    )
    again.add_argument(
        "--missing",
        action="store_true",
        help="only embed the memories written without a vector (a store opened with no "
        "embedder), with the store's own model",
    )
    again.set_defaults(run=_upkeep("reembed"), raw_path=True, existing=True)
    command("vacuum", help="reclaim forgotten memories' space").set_defaults(
        run=_upkeep("vacuum"), existing=True, needs_model=True
    )
    checkup = command("doctor", help="versions, models, plugins, adapters")
    checkup.add_argument(
        "--verify",
        action="store_true",
        help="also scan the store in full: every memory against its fingerprint, the index "
        "files, SQLite's integrity check (never creates the store)",
    )
    checkup.set_defaults(run=_lazy("embedmind.cli.doctor", "command"), raw_path=True)
    server = command("mcp", help="serve the store to agents over MCP (stdio)")
    server.add_argument("--namespace", default="default", help="the default namespace")
    server.add_argument("--agent", default="mcp", help="recorded as the writing agent")
    server.add_argument("--allow", action="append", help="namespaces it may access; repeatable")
    server.set_defaults(run=_upkeep("mcp"), raw_path=True)
    export = command("export", help="write memories and links as JSON Lines")
    export.add_argument("file", help="the file to write, or - for standard output")
    export.add_argument("--vectors", action="store_true", help="include the vectors")
    export.add_argument("--force", action="store_true", help="replace an existing file")
    export.set_defaults(run=_upkeep("export"), prepare=_upkeep("check_destination"), existing=True)
    load = command("import", help="read a JSON Lines export (idempotent)")
    load.add_argument("file", help="the file to read, or - for standard input")
    load.add_argument("--reembed", action="store_true", help="accept another model's export")
    load.set_defaults(run=_upkeep("import_"), needs_model=True)
    demo_parser = command("demo", help="remember a conversation and ask it questions")
    demo_parser.set_defaults(
        run=_lazy("embedmind.cli.demo", "command"), demo_store=":memory:", needs_model=True
    )


def build_parser(*, bench: bool = True) -> argparse.ArgumentParser:
    """The argument parser (exposed for the CLI reference docs).

    Args:
        bench: Register the benchmarks' own ``bench`` parser when they are
            installed; ``False`` registers its help line only (what ``main``
            does when no argument is ``bench``: importing them loads numpy).
    """
    parser = _Parser(prog="embedmind", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version)
    global_options.add(parser, after_command=False)
    shared = global_options.after_command()
    subparsers: Any = parser.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A command that accepts the global options after its name as well."""
        made: argparse.ArgumentParser = subparsers.add_parser(name, parents=[shared], **kwargs)
        return made

    _add_memory_commands(command)
    _add_upkeep_commands(command)
    # bench has its own --json PATH and --no-progress: its globals come before it.
    bench_seam.add_parser(subparsers, load=bench)
    aliases.add_parser(subparsers, shared)
    return parser


def _json_requested(words: Sequence[str]) -> bool:
    """Whether the global ``--json`` is on the command line (``bench``'s ``--json PATH`` is not).

    Read before parsing, so that a usage error can be printed as JSON too.
    """
    options = list(words)
    if "--" in options:
        options = options[: options.index("--")]
    command = _command_index(options)
    if command < len(options) and options[command] == "bench":
        options = options[:command]  # bench's own options follow its name
    return "--json" in options


def _command_index(words: Sequence[str]) -> int:
    """Where the command's name is: the first word that is neither an option nor its value."""
    takes_value = False
    for i, word in enumerate(words):
        if takes_value:
            takes_value = False
        elif word in ("--store", "--embedder"):
            takes_value = True
        elif not word.startswith("-"):
            return i
    return len(words)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    token = _JSON_USAGE.set(_json_requested(words))
    try:
        args = build_parser(bench="bench" in words).parse_args(words)
    finally:
        _JSON_USAGE.reset(token)
    store_path = (
        args.demo_store if args.command == "demo" and args.store == DEFAULT_STORE else args.store
    )
    try:
        try:
            code = _run(store_path, args)
        except EmbedmindError as e:
            print_error(type(e).__name__, str(e), as_json=args.json)
            code = _exit_code(e)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    return code


def _run(store_path: str, args: argparse.Namespace) -> int:
    """Dispatch, naming the fix when the store was opened with another model."""

    def out(text: str) -> None:
        print(text)

    try:
        return _dispatch(store_path, args, out)
    except EmbedderMismatchError as e:
        if e.source is not None:
            raise
        from embedmind.plugins import registered_name

        # Opened with another model: name it in the suggested reembed command by
        # its model id when that is registered, else by --embedder's value (a
        # plugin's name need not be its model id); "default" is not a name to give.
        chosen = None if args.embedder == global_options.DEFAULT_EMBEDDER else args.embedder
        name = registered_name(e.given.get("model_id", ""), chosen)
        raise EmbedderMismatchError(e.path, e.recorded, e.given, name=name) from None


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


def _dispatch(store_path: str, args: argparse.Namespace, out: Output) -> int:
    """Run the command on the store file or on the opened store.

    A command's ``prepare`` checks and completes its arguments first, so a
    refusal creates no store. A command that never embeds (``get``,
    ``list``, ``stats``, ``export``) opens the store without a model unless
    ``--embedder`` names one: loading the model is most of a command's time.
    """
    prepare = getattr(args, "prepare", None)
    if prepare is not None:
        prepare(args)
    if getattr(args, "existing", False):
        global_options.require_store(store_path)
    if getattr(args, "raw_path", False):  # works on the file, not an open store
        code: int = args.run(store_path, args, out)
        return code
    from embedmind.store import Store

    embedder = args.embedder
    if not getattr(args, "needs_model", False) and embedder == global_options.DEFAULT_EMBEDDER:
        embedder = None
    with Store.open(store_path, embedder=embedder) as store:
        code = args.run(store, args, out)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
