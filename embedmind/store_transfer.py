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
export carries) and checks every id against the store, writing nothing; then
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
from embedmind.backend.sqlite import graph_rows as graph
from embedmind.backend.sqlite import lifecycle_rows as lifecycle
from embedmind.backend.sqlite import records, vector_rows
from embedmind.backend.sqlite import session_rows as sessions
from embedmind.backend.sqlite.database import Database
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.checks import is_int
from embedmind.drafts import Prepared
from embedmind.embedders.adapt import identity
from embedmind.embedders.protocol import Embedder
from embedmind.engine import transfer_files, transfer_lines
from embedmind.engine.commit import CommitPath, Committed
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
from embedmind.writes import apply_batch, taken_elsewhere

FORMAT = "embedmind-jsonl"
VERSION = 1
_PAGE = 500

"""``(source id, kind, target id, created_at)``."""


class TransferMethods:
    """Mixed into :class:`embedmind.Store`."""

    _db: Database
    _lexical: LexicalIndex
    _embedder: Embedder | None
    _commit: CommitPath

    def export_jsonl(
        self,
        destination: PathArg | IO[str],
        *,
        include_vectors: bool = False,
        show_progress: bool = False,
    ) -> int:
        """Write every live memory and link, and the alias table, as JSON Lines: one snapshot.

        Everything is read inside one read transaction, so the file is the
        store at one instant even while other threads or processes write (in
        WAL mode a reader never blocks writers; the write-ahead log only
        cannot be reset while the export runs). In a ``":memory:"`` store,
        whose threads share one connection, other threads wait until the
        export is done.

        A path is written through a temporary file in the same directory,
        created with mode ``0600`` (the file holds the whole store), flushed to
        disk and renamed over the target only once complete: an existing file
        is replaced, and a failed or interrupted export leaves the target as
        it was (a process killed mid-export may leave ``NAME.*.tmp`` beside
        it). A symlink is followed: the file it names is replaced. A path that
        names a pipe or device (``/dev/stdout``) is written directly. An open
        text stream is written as it is, and not closed.

        Args:
            destination: A path (str, bytes or path-like) or a text stream.
            include_vectors: Also write each memory's vectors (base64 float32).
            show_progress: Show a progress bar on stderr.

        Returns:
            How many memories were written.

        Raises:
            InvalidInputError: When ``destination`` is not a usable path (empty,
                NUL, not encodable, a directory) or not a text stream.
            OSError: When the file cannot be created or written (a missing
                directory, no permission, a full disk).
        """
        progress = tqdm(disable=not show_progress, unit="memory", desc="export")
        with transfer_files.text_sink(destination) as out, progress as bar, self._db.read() as conn:
            recorded = vector_rows.read_identity(conn) or None
            header = {
                "type": "header", "format": FORMAT, "version": VERSION, "embedder": recorded,
                "session_context": sessions.enabled(conn),
            }  # fmt: skip
            out.write(transfer_files.line(header))
            for given, target in alias_table.current(conn).items():  # before the memories
                out.write(transfer_files.line(alias_table.line(given, target)))
            written, after = 0, 0
            while True:
                page = records.export_page(conn, after, _PAGE)
                if page:
                    after = page[-1]["key"]  # before _export_memory takes the key out
                for item in page:
                    out.write(self._export_memory(conn, item, include_vectors))
                written += len(page)
                bar.update(len(page))
                if len(page) < _PAGE:
                    break
            for src, dst, tiers, note, created in lifecycle.links(conn, None):
                link = {"src": src, "dst": dst, "tiers": tiers, "note": note, "created_at": created}
                out.write(transfer_files.line({"type": "link", **link}))
        return written

    def _export_memory(self, conn: Any, item: dict[str, Any], include_vectors: bool) -> str:
        key = item.pop("key")
        item["entities"] = graph.entity_names(conn, key)
        item["relations"] = [list(edge) for edge in graph.outgoing(conn, key)]
        if include_vectors:
            item["vectors"] = [
                {"start": s, "end": e, "f32le": base64.b64encode(blob).decode("ascii")}
                for s, e, blob in vector_rows.rows_of(conn, key)
            ]
        return transfer_files.line({"type": "memory", **item})

    def import_jsonl(
        self,
        source: PathArg | IO[str],
        *,
        reembed: bool = False,
        show_progress: bool = False,
    ) -> int:
        """Load memories and links written by :meth:`export_jsonl`; a bad file writes nothing.

        The file is read twice. The first pass validates every line, with the
        same checks as :meth:`embedmind.Store.remember` plus those of the
        fields only an export carries, and checks that no id is used twice or
        names a memory of another namespace in the store; it writes nothing.
        The second pass writes in batches of 500, one transaction each, and
        adds relations once their targets are in. A failure of the second
        pass (a full disk, the embedder) keeps the batches before it; the
        import is idempotent, so running it again completes it.
        The file's aliases (``alias`` lines, which an export writes before its
        memories) are merged into the store's table, the file's target winning
        for a key in both, before the memories after them are written.

        A stream that cannot seek is copied to a private temporary file during
        the first pass. A stream that can seek is read from where it is.

        Args:
            source: A path (str, bytes or path-like) or a text stream.
            reembed: Ignore the file's vectors and embed with the store's model,
                even when the file names another model.
            show_progress: Show progress bars on stderr.

        Returns:
            How many memories were read.

        Raises:
            InvalidInputError: When ``source`` is not a usable path or text
                stream, the file is not an embedmind export, or a line is not
                valid. ``field`` is ``"line N: FIELD"`` (``"line N"`` for a
                line that is not a JSON object, ``"source"`` for the source
                itself); nothing was written.
            ConflictError: When an id names a memory of another namespace in
                the store (the message names the line); nothing was written.
            EmbedderMismatchError: When its vectors come from another model and
                ``reembed`` is false; nothing was written.
            OSError: When the file cannot be opened or read.
        """
        with transfer_files.text_source(source) as replay:
            with tqdm(disable=not show_progress, unit="memory", desc="check") as bar:
                count = self._check_file(replay(), reembed, bar)
            with tqdm(disable=not show_progress, unit="memory", desc="import") as bar:
                self._write_file(replay(), reembed, bar)
        return count

    def _check_file(self, lines: Lines, reembed: bool, bar: Any) -> int:
        """Validate every line and check ids against the store; write nothing."""
        dims, _ = self._read_header(lines, reembed)
        seen: dict[str, int] = {}
        pending: list[tuple[int, Prepared]] = []
        keys: dict[str, str] = {}
        for number, item in transfer_lines.objects(lines):
            if item.get("type") == "link":
                with transfer_lines.at(number):
                    transfer_lines.parsed_link(item)
                continue
            if item.get("type") == "alias":
                with transfer_lines.at(number):
                    alias_table.from_line(item, keys)
                continue
            record = transfer_lines.parsed_record(number, item, dims)
            first = seen.setdefault(record.prepared.id, number)
            if first != number:
                raise InvalidInputError(
                    f"line {number}: id", f"{record.prepared.id!r} is also on line {first}"
                )
            pending.append((number, record.prepared))
            bar.update(1)
            if len(pending) == _PAGE:
                self._check_conflicts(pending)
                pending = []
        self._check_conflicts(pending)
        return len(seen)

    def _check_conflicts(self, pending: list[tuple[int, Prepared]]) -> None:
        """Refuse ids that name a memory of another namespace (the write would fail midway)."""
        if not pending:
            return
        with self._db.read() as conn:
            found = records.find_many(conn, [p.id for _, p in pending])
        for number, p in pending:
            existing = found.get(p.id)
            if existing is not None and existing.namespace != p.namespace:
                # Worded by writes.taken_elsewhere: the other namespace is not named.
                raise ConflictError(
                    p.id, f"line {number}: {taken_elsewhere(p.id)} (change the id in the file)"
                )

    def _write_file(self, lines: Lines, reembed: bool, bar: Any) -> None:
        # Every line is validated again: the records are not kept from the first
        # pass (a file may be larger than memory), and this also catches a file
        # that changed in between.
        dims, context = self._read_header(lines, reembed)
        if context is not None:
            self._adopt_session_context(context)
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
                self._adopt_aliases(aliases)
            batch.append(transfer_lines.parsed_record(number, item, dims))
            bar.update(1)
            if len(batch) == _PAGE:
                later += self._write_batch(batch, dims is not None)
                batch = []
        later += self._write_batch(batch, dims is not None)
        self._adopt_aliases(aliases)
        if not later and not links:
            return
        with self._commit.write() as tx:  # relations and links change no memory's row
            graph.add_relation_rows(tx.conn, _resolved(tx.conn, later)[0])
            for link in links:
                lifecycle.put_link(tx.conn, *link)

    def _adopt_session_context(self, on: bool) -> None:
        """Take the file's session context setting when the store indexes nothing yet.

        A restore into a new or empty store then behaves like the store it
        came from; a store that holds memories keeps its own setting (changing
        it would re-index memories the file does not hold).
        """
        with self._commit.write() as tx:  # the postings change, no memory: nothing to record
            if self._lexical.statistics(tx.conn)[0] == 0 and sessions.enabled(tx.conn) != on:
                self._lexical.rebuild(tx.conn, records.next_write_seq(tx.conn), session_context=on)

    def _adopt_aliases(self, aliases: dict[str, str]) -> None:
        """Merge the file's aliases into the table (the file's target wins); empty ``aliases``."""
        if aliases:
            entries = alias_table.validate(aliases)
            alias_table.set_aliases(self._commit, self._lexical, entries, replace=False)
            alias_table.reindex(self._commit, self._lexical, self._db)
            aliases.clear()

    def _read_header(self, lines: Lines, reembed: bool) -> tuple[int | None, bool | None]:
        """Read the header: the reused vectors' length, and the session context it names.

        Returns:
            The length of the file's vectors when they are to be reused (else
            ``None``), and the file's session context setting (``None``: an
            export without one).
        """
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
        if self._embedder is None or not recorded:
            return None, context
        mine = identity(self._embedder)
        if recorded == mine:
            return self._embedder.dims, context
        if not reembed:
            raise EmbedderMismatchError(self._db.path, recorded, mine, source="")
        return None, context

    def _write_batch(self, batch: list[Record], reuse_vectors: bool) -> list[Relation]:
        """Write one batch in one transaction; return the relations whose targets are not in."""
        if not batch:
            return []
        prepared = [r.prepared for r in batch]
        embedded: list[Embedded | None] = [None] * len(batch)
        if self._embedder is not None:
            given = [r.vectors if reuse_vectors else None for r in batch]
            missing = [i for i, e in enumerate(given) if e is None]
            fresh = embed_contents(
                self._embedder, [prepared[i].content for i in missing], [None] * len(missing)
            )
            for i, vectors in zip(missing, fresh, strict=True):
                given[i] = vectors
            embedded = given
        relations = [(r.prepared.id, k, t, c) for r in batch for k, t, c in r.relations]
        with self._commit.write() as tx:
            conn = tx.conn
            written = apply_batch(conn, self._lexical, prepared, embedded)
            found = records.find_many(conn, [p.id for p in prepared])
            for r in batch:
                records.restore_fields(conn, found[r.prepared.id].key, r.restored)
            # Relations whose targets are already in go in with their memories:
            # re-importing (which re-derives outgoing relations) never leaves a
            # committed memory without them.
            rows, waiting = _resolved(conn, relations)
            graph.add_relation_rows(conn, rows)
            tx.record(Committed("import", written=tuple(written)))
        return waiting


def _resolved(conn: Any, relations: Sequence[Relation]) -> tuple[list[Any], list[Relation]]:
    """Split relations into rows to insert (both ends live) and those still waiting.

    A relation whose target is neither in the file nor live in the store is
    skipped at the end of the import.
    """
    if not relations:
        return [], []
    found = records.find_many(conn, sorted({r[0] for r in relations} | {r[2] for r in relations}))
    rows, waiting = [], []
    for src, kind, dst, created in relations:
        a, b = found.get(src), found.get(dst)
        if a is not None and b is not None and not a.forgotten and not b.forgotten:
            rows.append((a.key, kind, b.key, created))
        else:
            waiting.append((src, kind, dst, created))
    return rows, waiting
