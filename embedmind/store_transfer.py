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
import binascii
import dataclasses
import datetime as _dt
import io
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import IO, Any

import numpy as np
from tqdm.auto import tqdm

from embedmind import aliases as alias_table
from embedmind import timestamps
from embedmind.backend.sqlite import graph_rows as graph
from embedmind.backend.sqlite import lifecycle_rows as lifecycle
from embedmind.backend.sqlite import records, vector_rows
from embedmind.backend.sqlite import session_rows as sessions
from embedmind.backend.sqlite.database import Database
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.checks import is_int, no_surrogates
from embedmind.drafts import Prepared, confidence_value, prepare
from embedmind.embedders.adapt import identity, normalized
from embedmind.embedders.protocol import Embedder
from embedmind.engine.commit import CommitPath, Committed
from embedmind.errors import ConflictError, EmbedderMismatchError, InvalidInputError
from embedmind.ids import validate_id
from embedmind.model import Draft, Tier
from embedmind.query.scope import normalize_namespace
from embedmind.vectors.embedding import Embedded, embed_contents
from embedmind.writes import apply_batch, taken_elsewhere

FORMAT = "embedmind-jsonl"
VERSION = 1
_PAGE = 500

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]
Lines = Iterator[tuple[int, str]]
"""Non-blank lines of an import source with their 1-based line numbers."""

_HEADER_FIELDS = frozenset({"type", "format", "version", "embedder", "session_context"})
_MEMORY_REQUIRED = (
    "id", "namespace", "content", "tier", "level", "created_at", "updated_at", "valid_from",
    "confidence",
)  # fmt: skip
_MEMORY_FIELDS = frozenset(
    {"type", "vectors", "entities", "relations", *records.EXPORT_COLUMNS} - {"key"}
)
_LINK_FIELDS = frozenset({"type", "src", "dst", "tiers", "note", "created_at"})
_VECTOR_FIELDS = frozenset({"start", "end", "f32le"})
_TIERS = tuple(t.value for t in Tier)
"""A tuple, not a set: ``in`` must compare a JSON list or object, not hash it."""
_INT64_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class _Record:
    """One validated memory line: what ``apply_batch`` writes, and what an import adds."""

    prepared: Prepared
    restored: dict[str, Any]
    relations: tuple[tuple[str, str, int], ...]
    vectors: Embedded | None


Link = tuple[str, str, list[str] | None, str, int]
Relation = tuple[str, str, str, int]
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
        with _text_sink(destination) as out, progress as bar, self._db.read() as conn:
            recorded = vector_rows.read_identity(conn) or None
            header = {
                "type": "header", "format": FORMAT, "version": VERSION, "embedder": recorded,
                "session_context": sessions.enabled(conn),
            }  # fmt: skip
            out.write(_line(header))
            for given, target in alias_table.current(conn).items():  # before the memories
                out.write(_line(alias_table.line(given, target)))
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
                out.write(_line({"type": "link", **link}))
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
        return _line({"type": "memory", **item})

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
        with _text_source(source) as replay:
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
        for number, item in _objects(lines):
            if item.get("type") == "link":
                with _at(number):
                    _link(item)
                continue
            if item.get("type") == "alias":
                with _at(number):
                    alias_table.from_line(item, keys)
                continue
            record = _record(number, item, dims)
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
        batch: list[_Record] = []
        later: list[Relation] = []
        links: list[Link] = []
        aliases: dict[str, str] = {}
        keys: dict[str, str] = {}
        for number, item in _objects(lines):
            if item.get("type") == "link":
                with _at(number):
                    links.append(_link(item))
                continue
            if item.get("type") == "alias":
                with _at(number):
                    key, target = alias_table.from_line(item, keys)
                aliases[key] = target
                continue
            if aliases:  # an export lists them first: its memories are indexed with them
                self._adopt_aliases(aliases)
            batch.append(_record(number, item, dims))
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
            header = _parse(number, text)
        except InvalidInputError as e:
            raise InvalidInputError(
                e.field, f"{_message(e)}; not an embedmind-jsonl export"
            ) from None
        if (
            header.get("format") != FORMAT
            or header.get("version") != VERSION
            or not is_int(header.get("version"))
        ):
            raise InvalidInputError(
                f"line {number}", "not an embedmind-jsonl export (version 1) header"
            )
        with _at(number):
            _known(header, _HEADER_FIELDS, "header")
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

    def _write_batch(self, batch: list[_Record], reuse_vectors: bool) -> list[Relation]:
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


@contextmanager
def _at(number: int) -> Iterator[None]:
    """Prefix the field of an :class:`InvalidInputError` raised inside with the line number."""
    try:
        yield
    except InvalidInputError as e:
        raise InvalidInputError(f"line {number}: {e.field}", _message(e)) from None


def _message(error: InvalidInputError) -> str:
    return str(error).removeprefix(f"{error.field}: ")


def _parse(number: int, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(
            f"line {number}", f"not JSON: {e.msg} at column {e.colno}"
        ) from None
    except (ValueError, RecursionError) as e:  # a 5,000-digit number, nesting too deep
        raise InvalidInputError(f"line {number}", f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"line {number}", f"expected a JSON object, got {type(value).__name__}"
        )
    return value


def _objects(lines: Lines) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines after the header, parsed; each is a memory, a link or an alias."""
    for number, text in lines:
        item = _parse(number, text)
        if item.get("type") not in ("memory", "link", "alias"):
            raise InvalidInputError(
                f"line {number}: type",
                f"expected 'memory', 'link' or 'alias', got {item.get('type')!r}",
            )
        yield number, item


def _record(number: int, item: dict[str, Any], dims: int | None) -> _Record:
    with _at(number):
        return _memory(item, dims)


def _memory(item: dict[str, Any], dims: int | None) -> _Record:
    """Validate a memory line through :func:`embedmind.drafts.prepare`, as ``remember`` does.

    Args:
        item: The parsed line.
        dims: The store's vector length when the file's vectors are reused,
            else ``None`` (they are then not read at all).

    Raises:
        InvalidInputError: Naming the first invalid field.
    """
    _known(item, _MEMORY_FIELDS, "memory")
    for name in _MEMORY_REQUIRED:
        if name not in item:
            raise InvalidInputError(name, "missing")
    if item["id"] is None:  # a Draft without an id would get a fresh one
        raise InvalidInputError("id", "expected a str, got null")
    fingerprint = item.get("fingerprint")
    if fingerprint is not None and not isinstance(fingerprint, str):
        raise InvalidInputError("fingerprint", "expected a str")
    relations = _relations(item.get("relations", []), item["id"])
    draft = Draft(
        content=item["content"],
        id=item["id"],
        namespace=item["namespace"],
        metadata=item.get("metadata"),
        tags=item.get("tags", ()),
        tier=item["tier"],
        level=item["level"],
        agent=item.get("agent", ""),
        session_id=item.get("session_id"),
        created_at=_instant(item["created_at"], "created_at"),
        valid_from=_instant(item["valid_from"], "valid_from"),
        expires_at=_optional_instant(item.get("expires_at"), "expires_at"),
        confidence=item["confidence"],
        entities=item.get("entities", ()),
        relations=[(kind, target) for kind, target, _ in relations],
    )
    # valid_to is restored afterwards, not given to prepare: a superseded or
    # contradicted memory may legitimately end before it began. The fingerprint
    # is derived data, computed again by prepare. Relations are added by the
    # import itself, with their created_at, once their targets are in.
    prepared = dataclasses.replace(
        prepare(draft, now=_micros(item["updated_at"], "updated_at")), relations=()
    )
    restored = {
        "updated_at": prepared.updated_at,
        "valid_to": _optional_micros(item.get("valid_to"), "valid_to"),
        "superseded_by": _optional_id(item.get("superseded_by"), "superseded_by"),
        "contradicted_by": _optional_id(item.get("contradicted_by"), "contradicted_by"),
        "access_count": _count(item.get("access_count", 0), "access_count"),
        "last_accessed_at": _optional_micros(item.get("last_accessed_at"), "last_accessed_at"),
        "prior_confidence": _optional_confidence(item.get("prior_confidence")),
    }
    given = None if dims is None else _vectors(item.get("vectors"), prepared.content, dims)
    return _Record(prepared, restored, relations, given)


def _known(item: dict[str, Any], fields: frozenset[str], what: str) -> None:
    # A misspelt field would otherwise be dropped without a word.
    for name in item:
        if name not in fields:
            shown = name if len(name) <= 64 else name[:64] + "..."
            raise InvalidInputError(shown, f"not a field of a {what} line")


def _micros(value: object, field: str) -> int:
    if not is_int(value):
        raise InvalidInputError(field, "expected integer microseconds since the Unix epoch")
    return timestamps.in_range(value, field)


def _optional_micros(value: object, field: str) -> int | None:
    return None if value is None else _micros(value, field)


def _instant(value: object, field: str) -> _dt.datetime:
    return timestamps.from_micros(_micros(value, field))


def _optional_instant(value: object, field: str) -> _dt.datetime | None:
    return None if value is None else _instant(value, field)


def _optional_id(value: object, field: str) -> str | None:
    return None if value is None else validate_id(value, field)


def _count(value: object, field: str) -> int:
    if not is_int(value) or not 0 <= value <= _INT64_MAX:
        raise InvalidInputError(field, "expected an integer >= 0 (64-bit)")
    return value


def _optional_confidence(value: object) -> float | None:
    if value is None:
        return None
    try:
        return confidence_value(value)
    except InvalidInputError as e:
        raise InvalidInputError("prior_confidence", _message(e)) from None


def _relations(value: object, source: object) -> tuple[tuple[str, str, int], ...]:
    """Check the shape of ``[kind, target id, created_at]`` triples (prepare checks the rest)."""
    if isinstance(value, str) or not isinstance(value, list):
        raise InvalidInputError("relations", "expected a list of [kind, target id, created_at]")
    out = []
    for triple in value:
        if not isinstance(triple, list) or len(triple) != 3:
            raise InvalidInputError("relations", "each relation is [kind, target id, created_at]")
        kind, target, created = triple
        if target == source:
            raise InvalidInputError("relations", "a memory cannot point at itself")
        out.append((kind, target, _micros(created, "relations")))
    return tuple(out)


def _vectors(rows: object, content: str, dims: int) -> Embedded | None:
    """Decode and validate a memory's vectors; ``None`` (embed afresh) when there are none.

    They go through the same check as a caller-given vector (finite, non-zero,
    ``dims`` long) and are stored as unit vectors; an exported vector comes
    back bit for bit.
    """
    if rows is None or rows == []:
        return None
    if not isinstance(rows, list):
        raise InvalidInputError("vectors", "expected a list of {start, end, f32le}")
    spans: list[tuple[int, int]] = []
    blobs: list[bytes] = []
    for row in rows:
        if not isinstance(row, dict) or set(row) != _VECTOR_FIELDS:
            raise InvalidInputError("vectors", "each vector is {start, end, f32le}")
        start, end, encoded = row["start"], row["end"], row["f32le"]
        if not (is_int(start) and is_int(end) and 0 <= start <= end <= len(content)):
            raise InvalidInputError(
                "vectors", f"span [{start!r}, {end!r}) is not within the content"
            )
        if not isinstance(encoded, str):
            raise InvalidInputError("vectors", "f32le must be a base64 string")
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError("vectors", "f32le is not valid base64") from None
        if len(blob) != 4 * dims:
            raise InvalidInputError(
                "vectors", f"expected {dims} float32 values, got {len(blob) / 4:g}"
            )
        spans.append((start, end))
        blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dims)
    return Embedded(spans, normalized(matrix, dims, "vectors"))


def _link(item: dict[str, Any]) -> Link:
    """Validate a link line as :meth:`embedmind.Store.link_namespaces` does."""
    _known(item, _LINK_FIELDS, "link")
    for name in ("src", "dst", "created_at"):
        if name not in item:
            raise InvalidInputError(name, "missing")
    tiers = item.get("tiers")
    if tiers is not None:
        if not isinstance(tiers, list):
            raise InvalidInputError("tiers", "expected null or a list of tiers")
        for tier in tiers:
            if tier not in _TIERS:
                raise InvalidInputError("tiers", f"{tier!r} is not a tier")
    note = item.get("note", "")
    if not isinstance(note, str):
        raise InvalidInputError("note", "expected a str")
    no_surrogates(note, "note")
    return (
        normalize_namespace(item["src"], "src"),
        normalize_namespace(item["dst"], "dst"),
        tiers,
        note,
        _micros(item["created_at"], "created_at"),
    )


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


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


# -- paths and streams -----------------------------------------------------------------------


def _is_path(value: object) -> bool:
    return isinstance(value, str | bytes | os.PathLike)


def _path(value: object, field: str) -> str:
    """Validate a path argument and return it as a str.

    Raises:
        InvalidInputError: When it is empty, contains NUL or cannot be encoded
            for the file system (``open`` would raise a raw ``ValueError``).
    """
    try:
        text = os.fsdecode(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(field, "expected a path or a text stream") from None
    if not text or "\x00" in text:
        raise InvalidInputError(field, "must be a non-empty path without NUL")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise InvalidInputError(
            field, "contains characters the file system cannot encode"
        ) from None
    return text


def _is_binary(stream: object) -> bool:
    return isinstance(stream, io.RawIOBase | io.BufferedIOBase)


@contextmanager
def _text_sink(destination: object) -> Iterator[IO[str]]:
    if _is_path(destination):
        with _replacement(_path(destination, "destination")) as handle:
            yield handle
        return
    if _is_binary(destination) or not callable(getattr(destination, "write", None)):
        raise InvalidInputError("destination", "expected a path or a text stream open for writing")
    yield destination  # type: ignore[misc]


@contextmanager
def _replacement(path: str) -> Iterator[IO[str]]:
    """A private temporary file that replaces ``path`` when the block completes.

    Raises:
        InvalidInputError: When ``path`` names a directory.
        OSError: When the temporary file cannot be created, written or renamed.
    """
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InvalidInputError(
            "destination", f"{path!r} is a directory; name a file like 'backup.jsonl'"
        )
    if info is not None and not stat.S_ISREG(info.st_mode):
        # A pipe, a terminal, /dev/stdout: there is no file to replace, and
        # renaming over a device node would be wrong. Stream into it.
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
        return
    # Beside the file a symlink names, so the rename stays on one file system
    # and the symlink keeps pointing at the new file.
    target = os.path.realpath(path)
    directory, name = os.path.split(target)
    prefix = name + "." if len(os.fsencode(name)) <= 200 else "embedmind-export."
    fd, temp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
    # The rename is durable only once the directory is synced: after a power
    # cut an acknowledged backup must not turn back into the old one.
    dir_fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextmanager
def _text_source(source: object) -> Iterator[Callable[[], Lines]]:
    """Yield a function returning the source's lines from the start, each time it is called.

    A path is opened in binary mode and decoded line by line, so an invalid
    byte is reported on its own line.

    Raises:
        InvalidInputError: When ``source`` is not a usable path or text stream.
    """
    if _is_path(source):
        path = _path(source, "source")
        if os.path.isdir(path):
            raise InvalidInputError("source", f"{path!r} is a directory; name an export file")
        with open(path, "rb") as handle, _replayable(handle) as replay:
            yield replay
        return
    if _is_binary(source) or not callable(getattr(source, "__iter__", None)):
        raise InvalidInputError(
            "source", "expected a path or a text stream (open the file in text mode)"
        )
    with _replayable(source) as replay:
        yield replay


@contextmanager
def _replayable(stream: Any) -> Iterator[Callable[[], Lines]]:
    """Read ``stream`` twice: rewound when it can seek, else from a copy made the first time.

    The copy (a private, unlinked temporary file) holds each numbered line as
    a JSON array, ASCII only, so the second pass sees exactly the lines and
    numbers the first one validated, whatever their line endings.
    """
    start = _position(stream)
    if start is not None:

        def rewind() -> Lines:
            stream.seek(start)
            return _numbered(stream)

        yield rewind
        return
    with tempfile.TemporaryFile("w+", encoding="ascii", newline="\n") as spool:
        copied = False

        def replay() -> Lines:
            nonlocal copied
            if copied:
                spool.seek(0)
                return ((int(n), str(t)) for n, t in map(json.loads, spool))
            copied = True
            return _spooled(_numbered(stream), spool)

        yield replay


def _position(stream: Any) -> Any:
    """Where a seekable stream is now, or ``None`` when it cannot be rewound (a pipe)."""
    seekable = getattr(stream, "seekable", None)
    try:
        return stream.tell() if callable(seekable) and seekable() else None
    except (OSError, ValueError):
        return None


def _spooled(lines: Lines, spool: IO[str]) -> Lines:
    for number, text in lines:
        spool.write(json.dumps([number, text]) + "\n")
        yield number, text


def _numbered(lines: Iterable[object]) -> Lines:
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidInputError(
                    f"line {number}", f"not UTF-8 (byte {e.start + 1} of the line)"
                ) from None
        elif isinstance(line, str):
            text = line
        else:
            raise InvalidInputError("source", f"expected lines of text, got {type(line).__name__}")
        if number == 1:
            text = text.removeprefix("\ufeff")  # a byte order mark some editors write
        if text.strip():
            yield number, text
