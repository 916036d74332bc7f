"""Export and import as JSON Lines: backups, migrations, moving memories between stores.

The first line is a header naming the format, the embedding model and
whether session context is on (an import into an empty store takes it); then
one line per live memory (every stored field, times as integer microseconds,
its entities and outgoing relations, and optionally its vectors as
little-endian float32 in base64), then one line per namespace link.

An export is one consistent snapshot: it reads inside a single read
transaction, which in WAL mode never blocks writers. A path is written
through a private (``0600``) temporary file renamed over the target once
complete, so a failed export never leaves half a file.

An import reads the file twice: first it validates every line (the same
validation as :meth:`embedmind.Store.remember`, plus the fields only an
export carries, plus what the store's backend cannot hold, such as NUL in
PostgreSQL text) and checks every id against the store, writing nothing; then
it writes in batches. A bad file therefore raises a typed error naming the
line and field and leaves the store as it was. Import keeps ids, timestamps,
supersession and link ``created_at``; it is idempotent (an id that exists is
overwritten with the same values). A file whose vectors come from another
model is refused unless ``reembed=True``, which ignores its vectors and
embeds with the store's model.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import IO, Any

from tqdm.auto import tqdm

from embedmind import aliases as alias_table
from embedmind.backend.protocol import ReadSession, Records
from embedmind.checks import is_int
from embedmind.drafts import Prepared
from embedmind.embedders.adapt import identity
from embedmind.engine import transfer_files, transfer_lines
from embedmind.engine.apply import apply_batch, taken_elsewhere
from embedmind.engine.commit import Committed, retrying
from embedmind.engine.state import Engine
from embedmind.engine.transfer_lines import (
    HEADER_FIELDS,
    Lines,
    Link,
    PathArg,
    Record,
    Relation,
)
from embedmind.errors import ConflictError, EmbedderMismatchError, InvalidInputError
from embedmind.vectors.embedding import Embedded, embed_contents

FORMAT = "embedmind-jsonl"
VERSION = 1
_PAGE = 500


def export_jsonl(
    engine: Engine,
    destination: PathArg | IO[str],
    *,
    include_vectors: bool = False,
    show_progress: bool = False,
) -> int:
    """Write every live memory and link, and the alias table, as JSON Lines: one snapshot."""
    progress = tqdm(disable=not show_progress, unit="memory", desc="export")
    sink = transfer_files.text_sink(destination)
    with sink as out, progress as bar, engine.backend.read() as session:
        recorded = session.meta.identity() or None
        header = {
            "type": "header", "format": FORMAT, "version": VERSION, "embedder": recorded,
            "session_context": session.sessions.context_enabled(),
        }  # fmt: skip
        out.write(transfer_files.line(header))
        for given, target in alias_table.current(session.aliases).items():  # before the memories
            out.write(transfer_files.line(alias_table.line(given, target)))
        written, after = 0, 0
        while True:
            page = session.records.export_page(after, _PAGE)
            if page:
                after = page[-1]["key"]  # before _export_memory takes the key out
            for item in page:
                out.write(_export_memory(session, item, include_vectors))
            written += len(page)
            bar.update(len(page))
            if len(page) < _PAGE:
                break
        for row in session.lifecycle.links(None):
            tiers = None if row.tiers is None else list(row.tiers)
            link = {
                "src": row.src, "dst": row.dst, "tiers": tiers, "note": row.note,
                "created_at": row.created_at,
            }  # fmt: skip
            out.write(transfer_files.line({"type": "link", **link}))
    return written


def _export_memory(session: ReadSession, item: dict[str, Any], include_vectors: bool) -> str:
    """One memory's export line: its row, entities, outgoing relations and maybe vectors."""
    key = item.pop("key")
    item["entities"] = session.graph.entity_names(key)
    item["relations"] = [list(edge) for edge in session.graph.outgoing(key)]
    if include_vectors:
        item["vectors"] = [
            {"start": s, "end": e, "f32le": base64.b64encode(blob).decode("ascii")}
            for s, e, blob in session.channels.vector_rows(key)
        ]
    return transfer_files.line({"type": "memory", **item})


def import_jsonl(
    engine: Engine,
    source: PathArg | IO[str],
    *,
    reembed: bool = False,
    show_progress: bool = False,
) -> int:
    """Load memories and links written by :meth:`export_jsonl`; a bad file writes nothing."""
    with transfer_files.text_source(source) as replay:
        with tqdm(disable=not show_progress, unit="memory", desc="check") as bar:
            count = _check_file(engine, replay(), reembed, bar)
        with tqdm(disable=not show_progress, unit="memory", desc="import") as bar:
            _write_file(engine, replay(), reembed, bar)
    return count


def _check_file(engine: Engine, lines: Lines, reembed: bool, bar: Any) -> int:
    """Validate every line, for the store's backend too, and check ids against it; write nothing."""
    dims, _ = _read_header(engine, lines, reembed)
    seen: dict[str, int] = {}
    pending: list[tuple[int, Prepared]] = []
    keys: dict[str, str] = {}
    for number, item in transfer_lines.objects(lines):
        if item.get("type") == "link":
            with transfer_lines.at(number):
                note = transfer_lines.parsed_link(item)[3]
                engine.backend.check_text(note, "note")
            continue
        if item.get("type") == "alias":
            with transfer_lines.at(number):
                alias_table.from_line(item, keys)
            continue
        record = transfer_lines.parsed_record(number, item, dims)
        with transfer_lines.at(number):  # the backend's own limits: found now, not midway
            engine.backend.check_memory(record.prepared)
        first = seen.setdefault(record.prepared.id, number)
        if first != number:
            raise InvalidInputError(
                f"line {number}: id", f"{record.prepared.id!r} is also on line {first}"
            )
        pending.append((number, record.prepared))
        bar.update(1)
        if len(pending) == _PAGE:
            _check_conflicts(engine, pending)
            pending = []
    _check_conflicts(engine, pending)
    return len(seen)


def _check_conflicts(engine: Engine, pending: list[tuple[int, Prepared]]) -> None:
    """Refuse ids that name a memory of another namespace (the write would fail midway)."""
    if not pending:
        return
    with engine.backend.read() as session:
        found = session.records.find_many([p.id for _, p in pending])
    for number, p in pending:
        existing = found.get(p.id)
        if existing is not None and existing.namespace != p.namespace:
            # Worded by apply.taken_elsewhere: the other namespace is not named.
            raise ConflictError(
                p.id, f"line {number}: {taken_elsewhere(p.id)} (change the id in the file)"
            )


def _write_file(engine: Engine, lines: Lines, reembed: bool, bar: Any) -> None:
    """Write the file's memories, aliases, relations and links (the second pass)."""
    # Every line is validated again: the records are not kept from the first
    # pass (a file may be larger than memory), and this also catches a file
    # that changed in between.
    dims, context = _read_header(engine, lines, reembed)
    if context is not None:
        _adopt_session_context(engine, context)
    batch: list[Record] = []
    later: list[Relation] = []
    links: list[Link] = []
    aliases: dict[str, str] = {}
    keys: dict[str, str] = {}
    for number, item in transfer_lines.objects(lines):
        if item.get("type") == "link":
            with transfer_lines.at(number):
                links.append(transfer_lines.parsed_link(item))
            continue
        if item.get("type") == "alias":
            with transfer_lines.at(number):
                key, target = alias_table.from_line(item, keys)
            aliases[key] = target
            continue
        if aliases:  # an export lists them first: its memories are indexed with them
            _adopt_aliases(engine, aliases)
        batch.append(transfer_lines.parsed_record(number, item, dims))
        bar.update(1)
        if len(batch) == _PAGE:
            later += _write_batch(engine, batch, dims is not None)
            batch = []
    later += _write_batch(engine, batch, dims is not None)
    _adopt_aliases(engine, aliases)
    if not later and not links:
        return
    with engine.commit.write() as tx:  # relations and links change no memory's row
        tx.session.graph.add_relation_rows(_resolved(tx.session.records, later)[0])
        for link in links:
            tx.session.lifecycle.put_link(*link)


def _adopt_session_context(engine: Engine, on: bool) -> None:
    """Take the file's session context setting when the store indexes nothing yet."""
    with engine.commit.write() as tx:  # the postings change, no memory: nothing to record
        if tx.session.channels.text_statistics()[0] == 0:
            tx.session.sessions.set_context(on)


def _adopt_aliases(engine: Engine, aliases: dict[str, str]) -> None:
    """Merge the file's aliases into the table (the file's target wins); empty ``aliases``."""
    if aliases:
        entries = alias_table.validate(aliases)
        alias_table.set_aliases(engine.commit, entries, replace=False)
        alias_table.reindex(engine.commit, engine.backend)
        aliases.clear()


def _read_header(engine: Engine, lines: Lines, reembed: bool) -> tuple[int | None, bool | None]:
    """Read the header: the reused vectors' length, and the session context it names."""
    first = next(lines, None)
    if first is None:
        raise InvalidInputError("source", "empty: not an embedmind-jsonl export")
    number, text = first
    try:
        header = transfer_lines.parse(number, text)
    except InvalidInputError as e:
        raise InvalidInputError(
            e.field, f"{transfer_lines.message(e)}; not an embedmind-jsonl export"
        ) from None
    if (
        header.get("format") != FORMAT
        or header.get("version") != VERSION
        or not is_int(header.get("version"))
    ):
        raise InvalidInputError(
            f"line {number}", "not an embedmind-jsonl export (version 1) header"
        )
    with transfer_lines.at(number):
        transfer_lines.known(header, HEADER_FIELDS, "header")
        if header.get("type") != "header":
            raise InvalidInputError("type", "the first line must be the header")
        recorded = header.get("embedder")
        if recorded is not None and not (
            isinstance(recorded, dict) and all(isinstance(v, str) for v in recorded.values())
        ):
            raise InvalidInputError("embedder", "expected null or an object of strings")
        context = header.get("session_context")
        if context is not None and not isinstance(context, bool):
            raise InvalidInputError("session_context", "expected true, false or null")
    embedder = engine.embedder
    if embedder is None or not recorded:
        return None, context
    mine = identity(embedder)
    if recorded == mine:
        return embedder.dims, context
    if not reembed:
        raise EmbedderMismatchError(engine.backend.path, recorded, mine, source="")
    return None, context


def _write_batch(engine: Engine, batch: list[Record], reuse_vectors: bool) -> list[Relation]:
    """Write one batch in one transaction; return the relations whose targets are not in."""
    if not batch:
        return []
    prepared = [r.prepared for r in batch]
    embedded: list[Embedded | None] = [None] * len(batch)
    if engine.embedder is not None:
        given = [r.vectors if reuse_vectors else None for r in batch]
        missing = [i for i, e in enumerate(given) if e is None]
        fresh = embed_contents(
            engine.embedder, [prepared[i].content for i in missing], [None] * len(missing)
        )
        for i, vectors in zip(missing, fresh, strict=True):
            given[i] = vectors
        embedded = given
    relations = [(r.prepared.id, k, t, c) for r in batch for k, t, c in r.relations]

    def write() -> list[Relation]:
        with engine.commit.write() as tx:
            rows = tx.session.records
            written = apply_batch(tx.session, prepared, embedded)
            found = rows.find_many([p.id for p in prepared])
            for r in batch:
                rows.restore_fields(found[r.prepared.id].key, r.restored)
            # Relations whose targets are already in go in with their memories:
            # re-importing (which re-derives outgoing relations) never leaves a
            # committed memory without them.
            resolved, waiting = _resolved(rows, relations)
            tx.session.graph.add_relation_rows(resolved)
            tx.record(Committed("import", written=tuple(written)))
        return waiting

    # A writer storing one of these ids at the same moment: run again, as an upsert.
    return retrying(write)


def _resolved(records: Records, relations: Sequence[Relation]) -> tuple[list[Any], list[Relation]]:
    """Split relations into rows to insert (both ends live) and those still waiting.

    A relation whose target is neither in the file nor live in the store is
    skipped at the end of the import.
    """
    if not relations:
        return [], []
    found = records.find_many(sorted({r[0] for r in relations} | {r[2] for r in relations}))
    rows, waiting = [], []
    for src, kind, dst, created in relations:
        a, b = found.get(src), found.get(dst)
        if a is not None and b is not None and not a.forgotten and not b.forgotten:
            rows.append((a.key, kind, b.key, created))
        else:
            waiting.append((src, kind, dst, created))
    return rows, waiting
