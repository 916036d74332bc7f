"""``embedmind``: remember, recall, get, forget, stats and demo from the shell.

Output is for people by default and JSON with ``--json``. Every embedmind
error ends in one line on stderr, ``error: <message>``, and an exit code:

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
====  ==========================================================
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from embedmind.cli import aliases, bench_seam, demo, doctor, global_options
from embedmind.cli.render import describe, jsonable, recall_lines
from embedmind.embedders.adapt import DEFAULT
from embedmind.errors import (
    ConflictError,
    EmbedderMismatchError,
    EmbedmindError,
    FilterTypeError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from embedmind.plugins import registered_name
from embedmind.reembed import reembed
from embedmind.store import Store

EXIT_OK, EXIT_NOT_FOUND, EXIT_INVALID, EXIT_CONFLICT, EXIT_STORAGE = 0, 1, 2, 3, 4
EXIT_SKIPPED = bench_seam.EXIT_SKIPPED
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


def _exit_code(error: EmbedmindError) -> int:
    """The documented exit code of an embedmind error (see docs/reference/errors.md)."""
    return next(code for kind, code in _EXIT_CODES if isinstance(error, kind))


def _json_arg(text: str | None, field: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(field, f"not valid JSON: {e.msg}") from None


@contextmanager
def _file_errors(command: str, verb: str, path: str) -> Iterator[None]:
    """Turn the failures of a file named on the command line into one-line usage errors.

    ``export_jsonl`` and ``import_jsonl`` raise a plain ``OSError`` for the
    file (missing directory, no permission, full disk); the store's own
    failures are ``StorageError`` (an ``OSError`` too) and keep their code.
    """
    try:
        yield
    except StorageError:
        raise
    except OSError as e:
        raise InvalidInputError(command, f"cannot {verb} {path!r}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        # Only the import file is parsed here; an engine that validates lines
        # itself raises InvalidInputError naming the line instead.
        raise InvalidInputError(command, f"{path!r} is not an embedmind export: {e}") from e


Output = Callable[[str], None]


def _remember(store: Store, args: argparse.Namespace, out: Output) -> int:
    ttl = None if args.ttl is None else _dt.timedelta(seconds=args.ttl)
    memory = store.remember(
        args.text,
        id=args.id,
        namespace=args.namespace,
        metadata=_json_arg(args.metadata, "--metadata"),
        tags=args.tag or (),
        tier=args.tier,
        agent=args.agent,
        session_id=args.session,
        ttl=ttl,
    )
    out(
        json.dumps(jsonable(memory), ensure_ascii=False) if args.json else f"remembered {memory.id}"
    )
    return EXIT_OK


def _recall(store: Store, args: argparse.Namespace, out: Output) -> int:
    result = store.recall(
        args.query,
        k=args.k,
        namespace=args.namespace or None,
        where=_json_arg(args.where, "--where"),
        mode=args.mode,
        temporal=args.temporal,
        widen=args.widen,
        latest=args.latest,
        explain=args.explain,
    )
    if args.json:
        out(json.dumps(jsonable(result), ensure_ascii=False))
        return EXIT_OK
    for line in recall_lines(result, explain=args.explain):
        out(line)
    return EXIT_OK


def _get(store: Store, args: argparse.Namespace, out: Output) -> int:
    memory = store.get(args.id)
    if memory is None:
        raise NotFoundError(args.id)
    out(json.dumps(jsonable(memory), ensure_ascii=False) if args.json else describe(memory))
    return EXIT_OK


def _forget(store: Store, args: argparse.Namespace, out: Output) -> int:
    if not store.forget(args.id):  # the engine's no-op is the CLI's "not found"
        raise NotFoundError(args.id)
    out(json.dumps({"id": args.id, "forgotten": True}) if args.json else f"forgot {args.id}")
    return EXIT_OK


def _stats(store: Store, args: argparse.Namespace, out: Output) -> int:
    stats = store.stats()
    if args.json:
        out(json.dumps(jsonable(stats), ensure_ascii=False))
        return EXIT_OK
    out(f"store       {store.path} (schema {stats.schema_version}, {stats.file_bytes:,} bytes)")
    out(f"memories    {stats.live} live, {stats.forgotten} forgotten, {stats.expired} expired")
    out(f"lexical     {stats.lexical_documents} documents, {stats.lexical_terms} terms")
    for namespace, count in stats.by_namespace.items():
        out(f"namespace   {namespace}: {count}")
    for agent, agent_stats in stats.by_agent.items():
        sessions = len(agent_stats.sessions)
        out(f"agent       {agent or '(unknown)'}: {agent_stats.live} in {sessions} sessions")
    return EXIT_OK


def _reembed(store_path: str, args: argparse.Namespace, out: Output) -> int:
    # The global --embedder names the target model ("default": the built-in
    # MiniLM); reembed resolves the name through the plugin registry.
    model: object = args.embedder
    if args.missing and model == DEFAULT:
        # Filling gaps keeps the store's own model: "default" means the
        # recorded one here, as it does for every command but a full reembed.
        with Store.open(store_path) as store:
            model = store.embedder
    try:
        done = reembed(
            store_path,
            model,
            batch_size=args.batch_size,
            show_progress=global_options.show_progress(args),
            drop_vector_fragments=args.drop_vector_fragments,
            missing=args.missing,
        )
    except ConflictError as e:
        # Fragments given as vectors: name the option, not the Python argument.
        message = str(e).replace("drop_vector_fragments=True", "--drop-vector-fragments")
        if message == str(e):
            raise
        raise ConflictError(e.id, message) from None
    out(json.dumps({"reembedded": done}) if args.json else f"re-embedded {done} memories")
    return EXIT_OK


def _vacuum(store: Store, args: argparse.Namespace, out: Output) -> int:
    def step(name: str) -> None:  # progress, like the bars: on stderr, only to a terminal
        print(f"vacuum: {name}...", file=sys.stderr)

    report = store.vacuum(progress=step if global_options.show_progress(args) else None)
    if args.json:
        out(json.dumps(jsonable(report)))
    else:
        out(
            f"reclaimed {report.removed} forgotten memories: "
            f"{report.bytes_before:,} -> {report.bytes_after:,} bytes"
        )
    return EXIT_OK


def _export(store: Store, args: argparse.Namespace, out: Output) -> int:
    to_stdout = args.file == "-"
    with _file_errors("export", "write", args.file):
        written = store.export_jsonl(
            sys.stdout if to_stdout else args.file,
            include_vectors=args.vectors,
            show_progress=global_options.show_progress(args),
        )
    summary = json.dumps({"exported": written}) if args.json else f"exported {written} memories"
    if to_stdout:  # the export is on stdout: the summary must not join it
        print(summary, file=sys.stderr)
    else:
        out(summary)
    return EXIT_OK


def _import(store: Store, args: argparse.Namespace, out: Output) -> int:
    with _file_errors("import", "read", args.file):
        try:
            source = sys.stdin if args.file == "-" else args.file
            read = store.import_jsonl(
                source, reembed=args.reembed, show_progress=global_options.show_progress(args)
            )
        except EmbedderMismatchError as e:
            # The engine does not know the file's name; the CLI does, so the
            # message can give the exact command that imports it. Without an
            # explicit --embedder the store reopens with its recorded model.
            name = None if args.embedder == DEFAULT else args.embedder
            raise EmbedderMismatchError(
                store.path, e.recorded, e.given, source=args.file, name=name
            ) from None
    out(json.dumps({"imported": read}) if args.json else f"imported {read} memories")
    return EXIT_OK


def _doctor(store_path: str, args: argparse.Namespace, out: Output) -> int:
    return doctor.run(
        out, store=store_path if args.verify else None, verify=args.verify, as_json=args.json
    )


def _mcp(store_path: str, args: argparse.Namespace, out: Output) -> int:
    # mcp_server imports the SDK lazily, so probe it here: before the store is
    # opened, and as one line instead of a traceback from inside the server.
    try:
        importlib.import_module("mcp.server.mcpserver")
    except ImportError:
        raise InvalidInputError(
            "mcp",
            'the MCP server needs the mcp package: pip install "embedmind[mcp]" '
            '(from a clone of the repository: pip install ".[mcp]")',
        ) from None
    from embedmind.cli.mcp_server import serve

    return serve(store_path, args.namespace, args.agent, args.allow or (), args.embedder)


def _demo(store: Store, args: argparse.Namespace, out: Output) -> int:
    demo.run(store, lambda text: out(text.rstrip("\n")))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the CLI reference docs)."""
    parser = argparse.ArgumentParser(prog="embedmind", description=__doc__.splitlines()[0])
    global_options.add(parser, after_command=False)
    shared = global_options.after_command()
    subparsers = parser.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A command that accepts the global options after its name as well."""
        return subparsers.add_parser(name, parents=[shared], **kwargs)

    remember = command("remember", help="store one memory")
    remember.add_argument("text")
    remember.add_argument("--id")
    remember.add_argument("--namespace", default="default")
    remember.add_argument("--metadata", help="a JSON object")
    remember.add_argument("--tag", action="append", help="repeat for several tags")
    remember.add_argument("--tier", default="semantic")
    remember.add_argument("--agent", default="cli")
    remember.add_argument("--session")
    remember.add_argument("--ttl", type=float, help="time to live in seconds")
    remember.set_defaults(run=_remember)

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
    recall.set_defaults(run=_recall, existing=True)

    for name, run, help_text in (
        ("get", _get, "show one memory"),
        ("forget", _forget, "tombstone one memory"),
    ):
        sub = command(name, help=help_text)
        sub.add_argument("id")
        sub.set_defaults(run=run, existing=True)
    command("stats", help="counts and sizes").set_defaults(run=_stats, existing=True)
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
    again.set_defaults(run=_reembed, raw_path=True, existing=True)
    command("vacuum", help="reclaim forgotten memories' space").set_defaults(
        run=_vacuum, existing=True
    )
    checkup = command("doctor", help="versions, models, plugins, adapters")
    checkup.add_argument(
        "--verify",
        action="store_true",
        help="also scan the store in full: every memory against its fingerprint, the index "
        "files, SQLite's integrity check (never creates the store)",
    )
    checkup.set_defaults(run=_doctor, raw_path=True)
    server = command("mcp", help="serve the store to agents over MCP (stdio)")
    server.add_argument("--namespace", default="default", help="the default namespace")
    server.add_argument("--agent", default="mcp", help="recorded as the writing agent")
    server.add_argument("--allow", action="append", help="namespaces it may access; repeatable")
    server.set_defaults(run=_mcp, raw_path=True)
    export = command("export", help="write memories and links as JSON Lines")
    export.add_argument("file", help="the file to write, or - for standard output")
    export.add_argument("--vectors", action="store_true", help="include the vectors")
    export.set_defaults(run=_export, existing=True)
    load = command("import", help="read a JSON Lines export (idempotent)")
    load.add_argument("file", help="the file to read, or - for standard input")
    load.add_argument("--reembed", action="store_true", help="accept another model's export")
    load.set_defaults(run=_import)
    demo_parser = command("demo", help="remember a conversation and ask it questions")
    demo_parser.set_defaults(run=_demo, demo_store=":memory:")
    # bench has its own --json PATH and --no-progress: its globals come before it.
    bench_seam.add_parser(subparsers)
    aliases.add_parser(subparsers, shared)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = build_parser().parse_args(argv)

    def out(text: str) -> None:
        print(text)

    store_path = (
        args.demo_store if args.command == "demo" and args.store == DEFAULT_STORE else args.store
    )
    try:
        try:
            return _dispatch(store_path, args, out)
        except EmbedderMismatchError as e:
            if e.source is not None:
                raise
            # Opened with another model: name it in the suggested reembed command by
            # its model id when that is registered, else by --embedder's value (a
            # plugin's name need not be its model id); "default" is not a name to give.
            chosen = None if args.embedder == DEFAULT else args.embedder
            name = registered_name(e.given.get("model_id", ""), chosen)
            raise EmbedderMismatchError(e.path, e.recorded, e.given, name=name) from None
    except EmbedmindError as e:
        print(f"error: {e}", file=sys.stderr)
        return _exit_code(e)


def _dispatch(store_path: str, args: argparse.Namespace, out: Output) -> int:
    """Run the command on the store file or on the opened store."""
    if getattr(args, "existing", False) or getattr(args, "verify", False):
        global_options.require_store(store_path)
    if getattr(args, "raw_path", False):  # works on the file, not an open store
        code: int = args.run(store_path, args, out)
        return code
    with Store.open(store_path, embedder=args.embedder) as store:
        code = args.run(store, args, out)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
