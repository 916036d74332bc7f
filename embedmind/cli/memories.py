"""The memory commands: ``remember``, ``recall``, ``list``, ``get``, ``forget``, ``stats``.

Each takes the open store, the parsed command line and the function that
prints one line; it returns the exit code or raises an embedmind error
(``embedmind.cli.main`` prints it). ``main`` imports this module only when
one of them runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import deque
from collections.abc import Callable, Iterable
from typing import IO, Any

from embedmind import checks
from embedmind.cli.render import describe, jsonable, list_line, recall_lines
from embedmind.errors import InvalidInputError, NotFoundError
from embedmind.model import Memory
from embedmind.store import Store

Output = Callable[[str], None]
EXIT_OK = 0


def json_arg(text: str | None, field: str) -> Any:
    """``text`` parsed as JSON (``None`` stays ``None``).

    Raises:
        InvalidInputError: When ``text`` is not valid JSON, naming ``field``.
    """
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(field, f"not valid JSON: {e.msg}") from None


def content(text: str | None, stdin: IO[str] | None = None) -> str:
    """What ``remember`` stores: TEXT, or standard input for ``-`` or no TEXT from a pipe.

    Trailing line breaks of standard input are dropped, as ``$(...)`` drops
    them: ``echo tea | embedmind remember`` stores ``tea``.

    Args:
        text: The positional TEXT (``None`` when it was not given).
        stdin: Standard input (default: ``sys.stdin``).

    Raises:
        InvalidInputError: When no TEXT is given and standard input is a
            terminal, when standard input is closed, or is not UTF-8.
    """
    source = sys.stdin if stdin is None else stdin
    if text is not None and text != "-":
        return text
    if source is None or (text is None and source.isatty()):  # None: stdin closed (<&-)
        raise InvalidInputError(
            "text",
            "missing: embedmind remember TEXT, or pipe it in "
            "(echo TEXT | embedmind remember, or embedmind remember - < FILE)",
        )
    raw = getattr(source, "buffer", None)
    try:  # the bytes, decoded here: a stray byte is a usage error, not a traceback
        read = raw.read().decode("utf-8") if raw is not None else source.read()
    except UnicodeDecodeError as e:
        raise InvalidInputError("text", f"standard input is not UTF-8: {e}") from None
    return read.rstrip("\r\n")


def read_text(args: argparse.Namespace) -> None:
    """``remember``'s preparation: its TEXT, read from standard input when it says so."""
    args.text = content(args.text)


def remember(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind remember [TEXT|-]``: store one memory (``read_text`` ran first)."""
    ttl = None if args.ttl is None else checks.seconds(args.ttl, "--ttl")
    memory = store.remember(
        args.text,
        id=args.id,
        namespace=args.namespace,
        metadata=json_arg(args.metadata, "--metadata"),
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


def recall(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind recall QUERY``: the best memories for a query."""
    result = store.recall(
        args.query,
        k=args.k,
        namespace=args.namespace or None,
        where=json_arg(args.where, "--where"),
        mode=args.mode,
        temporal=args.temporal,
        widen=args.widen,
        latest=args.latest,
        explain=args.explain,
        min_score=args.min_score,
    )
    if args.json:
        out(json.dumps(jsonable(result), ensure_ascii=False))
        return EXIT_OK
    for line in recall_lines(result, explain=args.explain):
        out(line)
    return EXIT_OK


def listing(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind list``: a scope's live memories by ``created_at``, one per line.

    With ``--json`` each line is one memory as ``get --json`` prints it (JSON
    Lines, streamed: a large store never waits in memory).
    """
    for name, value in (("--limit", args.limit), ("--offset", args.offset)):
        if value is not None and value < 0:
            raise InvalidInputError(name, f"must be 0 or more, got {value}")
    memories = store.iter(args.namespace or None, where=json_arg(args.where, "--where"))
    shown = _page(memories, newest=args.newest, offset=args.offset, limit=args.limit)
    for memory in shown:
        out(json.dumps(jsonable(memory), ensure_ascii=False) if args.json else list_line(memory))
    return EXIT_OK


def _page(
    memories: Iterable[Memory], *, newest: bool, offset: int, limit: int | None
) -> Iterable[Memory]:
    """The page ``offset``, ``limit`` of ``memories`` (time order; ``newest``: reversed).

    Newest first keeps only the last ``offset + limit`` while reading, so a
    page of a large store holds one page, not the store.
    """
    if newest:
        window = None if limit is None else offset + limit
        memories = reversed(deque(memories, maxlen=window))
    stop = None if limit is None else offset + limit
    return itertools.islice(memories, offset, stop)


def get(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind get ID``: one memory."""
    memory = store.get(args.id)
    if memory is None:
        raise NotFoundError(args.id)
    out(json.dumps(jsonable(memory), ensure_ascii=False) if args.json else describe(memory))
    return EXIT_OK


def forget(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind forget ID``: tombstone one memory."""
    if not store.forget(args.id):  # the engine's no-op is the CLI's "not found"
        raise NotFoundError(args.id)
    out(json.dumps({"id": args.id, "forgotten": True}) if args.json else f"forgot {args.id}")
    return EXIT_OK


def stats(store: Store, args: argparse.Namespace, out: Output) -> int:
    """``embedmind stats``: counts and sizes."""
    counts = store.stats()
    if args.json:
        out(json.dumps(jsonable(counts), ensure_ascii=False))
        return EXIT_OK
    out(f"store       {store.path} (schema {counts.schema_version}, {counts.file_bytes:,} bytes)")
    out(f"memories    {counts.live} live, {counts.forgotten} forgotten, {counts.expired} expired")
    out(f"lexical     {counts.lexical_documents} documents, {counts.lexical_terms} terms")
    for namespace, count in counts.by_namespace.items():
        out(f"namespace   {namespace}: {count}")
    for agent, agent_stats in counts.by_agent.items():
        sessions = len(agent_stats.sessions)
        out(f"agent       {agent or '(unknown)'}: {agent_stats.live} in {sessions} sessions")
    return EXIT_OK
