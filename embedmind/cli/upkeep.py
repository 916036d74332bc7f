"""The store commands: ``reembed``, ``vacuum``, ``export``, ``import`` and ``mcp``.

As in :mod:`~embedmind.cli.memories`, each takes the store (or its path, for
the commands that open it themselves), the parsed command line and the
function that prints one line, and returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from embedmind.cli import global_options
from embedmind.cli.render import jsonable
from embedmind.errors import (
    ConflictError,
    EmbedderMismatchError,
    InvalidInputError,
    StorageError,
)
from embedmind.reembed import reembed as reembed_store
from embedmind.store import Store

Output = Callable[[str], None]
EXIT_OK = 0
STDIO = "-"
"""The file name that means standard output (export) or standard input (import)."""


@contextmanager
def _file_errors(command: str, verb: str, path: str) -> Iterator[None]:
    """Turn the failures of a file named on the command line into one-line usage errors.

    ``export_jsonl`` and ``import_jsonl`` raise a plain ``OSError`` for the
    file (missing directory, no permission, full disk); the store's own
    failures are ``StorageError`` (an ``OSError`` too) and keep their code,
    and a closed standard output (``export - | head``) reaches ``main``,
    which stops quietly.
    """
    try:
        yield
    except (StorageError, BrokenPipeError):
        raise
    except OSError as e:
        raise InvalidInputError(command, f"cannot {verb} {path!r}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        # Only the import file is parsed here; an engine that validates lines
        # itself raises InvalidInputError naming the line instead.
        raise InvalidInputError(command, f"{path!r} is not an embedmind export: {e}") from e


def reembed(store_path: str, args: argparse.Namespace, out: Output) -> int:
    """``embedmind reembed``: every memory and fragment with ``--embedder``'s model."""
    # The global --embedder names the target model ("default": the built-in
    # MiniLM); reembed resolves the name through the plugin registry.
    model: object = args.embedder
    if args.missing and model == global_options.DEFAULT_EMBEDDER:
        # Filling gaps keeps the store's own model: "default" means the
        # recorded one here, as it does for every command but a full reembed.
        with Store.open(store_path) as store:
            model = store.embedder
    try:
        done = reembed_store(
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


def vacuum(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind vacuum``: reclaim forgotten memories' space."""

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


def check_destination(args: argparse.Namespace) -> None:
    """``export``'s preparation: refuse to replace an existing file unless ``--force``.

    An export is often the backup, and the last one should not vanish under
    a repeated command. A pipe or a device (``/dev/stdout``) is streamed
    into, never replaced, so only a regular file is refused; ``-`` is
    standard output.

    Raises:
        InvalidInputError: When ``args.file`` is an existing file and
            ``--force`` is off.
    """
    if args.file != STDIO and not args.force and os.path.isfile(args.file):
        raise InvalidInputError(
            "export",
            f"{args.file!r} exists: pass --force to replace it, or name another file "
            "(nothing was written)",
        )


def export(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind export FILE|-``: memories, links and aliases as JSON Lines (checked first)."""
    to_stdout = args.file == STDIO
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


def import_(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind import FILE|-``: read an export (idempotent)."""
    with _file_errors("import", "read", args.file):
        try:
            source = sys.stdin if args.file == STDIO else args.file
            read = store.import_jsonl(
                source, reembed=args.reembed, show_progress=global_options.show_progress(args)
            )
        except EmbedderMismatchError as e:
            # The engine does not know the file's name; the CLI does, so the
            # message can give the exact command that imports it. Without an
            # explicit --embedder the store reopens with its recorded model.
            name = None if args.embedder == global_options.DEFAULT_EMBEDDER else args.embedder
            raise EmbedderMismatchError(
                store.path, e.recorded, e.given, source=args.file, name=name
            ) from None
    out(json.dumps({"imported": read}) if args.json else f"imported {read} memories")
    return EXIT_OK


def mcp(store_path: str, args: argparse.Namespace, out: Output) -> int:
    """``embedmind mcp``: serve the store over MCP (stdio)."""
    del out
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
