"""Applying validated records inside one write session: inserts, upserts, tombstones, deletes.

Input is validated (:mod:`embedmind.drafts`) before the transaction begins;
inside it, an id that already exists in the same namespace is an upsert (its
``created_at`` kept, its postings re-derived only when the content changed),
and an id that exists in another namespace aborts the whole transaction with
:class:`ConflictError`. Every function takes the write session of a
transaction the commit path opened (:mod:`embedmind.engine.commit`); the
backend keeps its derived indexes (postings, vector caches) in step.

Concurrent writers of one memory: the rows a write reads through
``records.find``/``find_many`` are held until it commits (a second writer
waits, then reads what the first committed), and a supersede checks that
its target is still current in the statement that marks it. Two writers
inserting one new id at once: the second's transaction rolls back, and the
commit path runs it again (:func:`embedmind.engine.commit.retrying`), now an
upsert or a :class:`ConflictError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from embedmind import timestamps
from embedmind.backend.protocol import RecordWrites, WriteSession
from embedmind.backend.values import RowRef, Space
from embedmind.drafts import Prepared, memories_of
from embedmind.errors import ConflictError, InvalidInputError, NotFoundError
from embedmind.model import Memory
from embedmind.vectors.embedding import Embedded, row_blobs

VectorsWritten = Callable[[npt.NDArray[np.int64], npt.NDArray[np.float32]], None]
"""Told the vec_keys and unit float32 rows a transaction just stored."""

SUPERSEDES = "supersedes"
"""Relation kind of the edge from a new version to the memory it replaces."""


def apply_batch(
    session: WriteSession,
    batch: Sequence[Prepared],
    embedded: Sequence[Embedded | None],
    vectors_written: VectorsWritten | None = None,
) -> list[Memory]:
    """Write ``batch`` (and its vectors) inside the session's transaction.

    Args:
        session: The write session of an open transaction.
        batch: Validated records.
        embedded: Per record, its vectors, or ``None`` for a text-only store.
        vectors_written: Told the vec_keys and rows of a batch of new
            memories as soon as their vector rows are in, before the postings
            (the commit path's early index extension during a bulk load).

    Returns:
        The stored memories, in order.

    Raises:
        ConflictError: When an id already names a memory in another namespace
            (the message does not name that namespace).
        InvalidInputError: When a supersede would end the old version's
            validity at or before its ``valid_from``.
    """
    rows = session.records
    ids = [p.id for p in batch]
    # First, and whatever the batch holds: the rows found are held, in key
    # order, before any of them is written (RecordWrites.find_many).
    existing = rows.find_many(ids)
    if not existing and len(set(ids)) == len(ids):
        # The common case, all new ids: bulk statements, no read-back.
        keys = rows.insert_many(batch)
        # Vectors before postings: the index can be extended with them while
        # the postings, the larger part of the work, are written.
        with_vectors = [(k, v) for k, v in zip(keys, embedded, strict=True) if v is not None]
        if with_vectors:
            _put_vectors(rows, with_vectors, vectors_written)
        rows.index_text([(key, p.content) for key, p in zip(keys, batch, strict=True)])
        if _link_graph(session, batch, keys, replace=False):
            stored = rows.load(keys)  # supersession changed rows
            return [stored[key] for key in keys]
        return memories_of(batch)
    return _apply_one_by_one(session, batch, embedded)


def _put_vectors(
    rows: RecordWrites,
    with_vectors: Sequence[tuple[int, Embedded]],
    vectors_written: VectorsWritten | None,
) -> None:
    """Store new memories' vectors in one call, their blobs cut from one matrix."""
    matrix = np.concatenate([v.vectors for _, v in with_vectors])
    blobs = row_blobs(matrix)
    items = []
    at = 0
    for key, vectors in with_vectors:
        count = len(vectors.spans)
        items.append((key, vectors.spans, blobs[at : at + count]))
        at += count
    # One call for the batch: a server backend writes it in one round trip.
    vec_keys = rows.put_vectors_many(items)
    if vectors_written is not None and vec_keys:
        vectors_written(np.asarray(vec_keys, dtype=np.int64), matrix)


def _link_graph(
    session: WriteSession, batch: Sequence[Prepared], keys: Sequence[int], *, replace: bool
) -> bool:
    """Write entities, relations and supersession of freshly written records.

    Targets are resolved after every record of the batch is in place, so a
    memory may relate to one written earlier in the same batch.

    Returns:
        Whether anything was superseded.

    Raises:
        NotFoundError: When a relation or supersede target is missing or forgotten.
        InvalidInputError: When a supersede target is in another namespace,
            already superseded by another memory (earlier in this batch
            included), or the memory itself.
    """
    targets = {t for p in batch for _, t in p.relations} | {t for p in batch for t in p.supersedes}
    if not targets and not any(p.entities for p in batch) and not replace:
        return False
    graph = session.graph
    found = session.records.find_many(sorted(targets)) if targets else {}
    superseded = False
    for p, key in zip(batch, keys, strict=True):
        if replace:
            graph.replace_outgoing(key, keep_kind=SUPERSEDES)
        graph.add_entities(key, p.entities)
        edges = []
        for kind, target in p.relations:
            edges.append((kind, _live_target(found, target, p.id, "relations").key))
        for target in p.supersedes:
            existing = _live_target(found, target, p.id, "supersedes")
            if existing.namespace != p.namespace:
                raise InvalidInputError(
                    "supersedes",
                    f"{target!r} is in another namespace: superseding never crosses "
                    "namespaces (supersede it from its own namespace)",
                )
            # The check and the write in one statement, on the row as it is
            # now: `found` was read before this batch's own supersedes, and a
            # second successor of one version would be a fork lineage never shows.
            if not graph.mark_superseded(existing.key, p.id, p.valid_from, p.updated_at):
                raise _superseded_already(session, target)
            _check_window(session, existing, target, p.valid_from)
            edges.append((SUPERSEDES, existing.key))
            superseded = True
        graph.add_relations(key, edges, p.updated_at)
    return superseded


def _superseded_already(session: WriteSession, target: str) -> InvalidInputError:
    """The error for a supersede of a version that another memory replaced already."""
    current = session.records.find(target)
    by = None if current is None else current.superseded_by
    return InvalidInputError(
        "supersedes",
        f"{target!r} was already superseded by {by!r}; supersede the newest version instead",
    )


def _check_window(session: WriteSession, existing: RowRef, target: str, ends_at: int) -> None:
    """Refuse to end ``target``'s validity at or before it began.

    Superseding closes the old version's window at the new version's
    ``valid_from``; an earlier instant would store ``valid_to <= valid_from``,
    a window :func:`embedmind.drafts.prepare` refuses, and the old version
    would be valid at no instant. Refused rather than clamped: a clamp would
    silently rewrite the history the caller asked for.
    """
    began = timestamps.to_micros(
        session.records.load([existing.key])[existing.key].valid_from, "valid_from"
    )
    if ends_at <= began:
        raise InvalidInputError(
            "supersedes",
            f"{target!r} is valid from {_iso(began)}, but the new version starts at "
            f"{_iso(ends_at)}, which would end the old one before it began; pass a later "
            "now= (or valid_from=) for the new version",
        )


def _iso(micros: int) -> str:
    return timestamps.from_micros(micros).isoformat()


def taken_elsewhere(memory_id: str) -> ConflictError:
    """The error for an id that names a memory of another namespace.

    The message does not say which namespace: ids can be caller-chosen (a
    LlamaIndex node id), and naming the holder would tell one tenant another's
    namespace names.
    """
    return ConflictError(
        memory_id,
        f"id {memory_id!r} is already taken by a memory in another namespace; ids are unique "
        "across the store: pick another id (or omit it for a fresh one), or write it from "
        "the namespace that holds it",
    )


def _live_target(found: dict[str, RowRef], target: str, source: str, field: str) -> RowRef:
    existing = found.get(target)
    if existing is None or existing.forgotten:
        raise NotFoundError(target, f"{field} target")
    if target == source:
        raise InvalidInputError(field, "a memory cannot point at itself")
    return existing


def _apply_one_by_one(
    session: WriteSession, batch: Sequence[Prepared], embedded: Sequence[Embedded | None]
) -> list[Memory]:
    rows = session.records
    keys: list[int] = []
    pending: dict[int, str] = {}
    stale: list[int] = []
    for p, vectors in zip(batch, embedded, strict=True):
        existing = rows.find(p.id)
        if existing is None:
            key = rows.insert(p)
            pending[key] = p.content
            replace_vectors(session, key, vectors)
        else:
            if existing.namespace != p.namespace:
                raise taken_elsewhere(p.id)
            key = existing.key
            # A new session moves the memory to another dialog: its session
            # context (and its old neighbours') must be re-derived.
            moved = session.sessions.session_ids([key]).get(key) != p.session_id
            rows.replace(key, p, existing.created_at)
            if existing.forgotten or existing.content != p.content or key in pending or moved:
                stale.append(key)
                pending[key] = p.content
                replace_vectors(session, key, vectors)
            elif vectors is not None and _differ(session, key, vectors):
                # Same words, other vectors: a caller-given vector changed (LlamaIndex
                # embeds metadata too) or the embedder did; the postings stay.
                replace_vectors(session, key, vectors)
        keys.append(key)
    rows.unindex_text(stale)
    rows.index_text(list(pending.items()))
    _link_graph(session, batch, keys, replace=True)
    stored = rows.load(keys)
    return [stored[key] for key in keys]


def _differ(session: WriteSession, key: int, vectors: Embedded) -> bool:
    """Whether ``vectors`` are not exactly the memory's stored vectors."""
    stored = session.channels.vector_rows(key)
    fresh = [(s, e, b) for (s, e), b in zip(vectors.spans, vectors.blobs(), strict=True)]
    return stored != fresh


def replace_vectors(session: WriteSession, key: int, vectors: Embedded | None) -> None:
    """Drop a memory's vectors and store ``vectors`` (if any) in their place."""
    session.records.remove_vectors(key)
    if vectors is not None:
        session.records.put_vectors(key, vectors.spans, vectors.blobs())


def forget(session: WriteSession, memory_id: str, now: int) -> bool:
    """Tombstone a memory and drop its postings; ``False`` when missing or already forgotten."""
    existing = session.records.find(memory_id)
    if existing is None or existing.forgotten:
        return False
    session.records.mark_forgotten(existing.key, now)
    session.records.unindex_text([existing.key])
    session.records.remove_vectors(existing.key)
    drop_fragments(session, existing.key)
    return True


def delete(session: WriteSession, memory_id: str) -> bool:
    """Remove a memory at once, with everything derived from it; ``False`` when missing."""
    existing = session.records.find(memory_id)
    if existing is None:
        return False
    session.records.delete([existing.key])
    return True


def drop_fragments(session: WriteSession, key: int) -> None:
    """Remove a memory's fragments (and where they came from) in the session's transaction."""
    session.records.remove_vectors(key, Space.FRAGMENTS)
    session.fragments.set_source(key, None)
