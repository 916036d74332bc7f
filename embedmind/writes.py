"""The write path: one transaction applies records and their postings together.

Input is validated (:mod:`embedmind.drafts`) before the transaction begins;
inside it, an id that already exists in the same namespace is an upsert (its
``created_at`` kept, its postings re-derived only when the content changed),
and an id that exists in another namespace aborts the whole transaction with
:class:`ConflictError`.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from embedmind import timestamps
from embedmind.backend.sqlite import fragment_rows, records, vector_rows
from embedmind.backend.sqlite import graph_rows as graph
from embedmind.backend.sqlite import session_rows as sessions
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.drafts import Prepared
from embedmind.errors import ConflictError, InvalidInputError, NotFoundError
from embedmind.model import Memory
from embedmind.vectors.embedding import Embedded


def apply_batch(
    conn: apsw.Connection,
    lexical: LexicalIndex,
    batch: Sequence[Prepared],
    embedded: Sequence[Embedded | None],
) -> list[Memory]:
    """Write ``batch`` (and its vectors) inside the caller's write transaction.

    Args:
        conn: A connection inside a write transaction.
        lexical: The BM25 index.
        batch: Validated records.
        embedded: Per record, its vectors, or ``None`` for a text-only store.

    Returns:
        The stored memories, in order.

    Raises:
        ConflictError: When an id already names a memory in another namespace
            (the message does not name that namespace).
        InvalidInputError: When a supersede would end the old version's
            validity at or before its ``valid_from``.
    """
    version = records.next_write_seq(conn)
    ids = [p.id for p in batch]
    if len(set(ids)) == len(ids) and not records.find_many(conn, ids):
        # The common case, all new ids: bulk statements, no read-back.
        keys = records.insert_many(conn, batch)
        lexical.add(conn, [(key, p.content) for key, p in zip(keys, batch, strict=True)], version)
        for key, vectors in zip(keys, embedded, strict=True):
            if vectors is not None:
                vector_rows.add(conn, key, vectors.spans, vectors.blobs())
        if _link_graph(conn, batch, keys, replace=False):
            stored = records.select_by_keys(conn, keys)  # supersession changed rows
            return [stored[key] for key in keys]
        return [records.from_prepared(p) for p in batch]
    return _apply_one_by_one(conn, lexical, batch, embedded, version)


SUPERSEDES = "supersedes"
"""Relation kind of the edge from a new version to the memory it replaces."""


def _link_graph(
    conn: apsw.Connection, batch: Sequence[Prepared], keys: Sequence[int], *, replace: bool
) -> bool:
    """Write entities, relations and supersession of freshly written records.

    Targets are resolved after every record of the batch is in place, so a
    memory may relate to one written earlier in the same batch.

    Returns:
        Whether anything was superseded.

    Raises:
        NotFoundError: When a relation or supersede target is missing or forgotten.
        InvalidInputError: When a supersede target is in another namespace,
            already superseded, or the memory itself.
    """
    targets = {t for p in batch for _, t in p.relations} | {t for p in batch for t in p.supersedes}
    if not targets and not any(p.entities for p in batch) and not replace:
        return False
    found = records.find_many(conn, sorted(targets)) if targets else {}
    superseded = False
    for p, key in zip(batch, keys, strict=True):
        if replace:
            graph.replace_outgoing(conn, key, keep_kind=SUPERSEDES)
        graph.add_entities(conn, key, p.entities)
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
            if existing.superseded_by is not None:
                raise InvalidInputError(
                    "supersedes",
                    f"{target!r} was already superseded by {existing.superseded_by!r}; "
                    "supersede the newest version instead",
                )
            _check_window(conn, existing, target, p.valid_from)
            graph.mark_superseded(conn, existing.key, p.id, p.valid_from, p.updated_at)
            edges.append((SUPERSEDES, existing.key))
            superseded = True
        graph.add_relations(conn, key, edges, p.updated_at)
    return superseded


def _check_window(
    conn: apsw.Connection, existing: records.Existing, target: str, ends_at: int
) -> None:
    """Refuse to end ``target``'s validity at or before it began.

    Superseding closes the old version's window at the new version's
    ``valid_from``; an earlier instant would store ``valid_to <= valid_from``,
    a window :func:`embedmind.drafts.prepare` refuses, and the old version
    would be valid at no instant. Refused rather than clamped: a clamp would
    silently rewrite the history the caller asked for.
    """
    began = timestamps.to_micros(
        records.select_by_keys(conn, [existing.key])[existing.key].valid_from, "valid_from"
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


def _live_target(
    found: dict[str, records.Existing], target: str, source: str, field: str
) -> records.Existing:
    existing = found.get(target)
    if existing is None or existing.forgotten:
        raise NotFoundError(target, f"{field} target")
    if target == source:
        raise InvalidInputError(field, "a memory cannot point at itself")
    return existing


def _apply_one_by_one(
    conn: apsw.Connection,
    lexical: LexicalIndex,
    batch: Sequence[Prepared],
    embedded: Sequence[Embedded | None],
    version: int,
) -> list[Memory]:
    keys: list[int] = []
    pending: dict[int, str] = {}
    stale: list[int] = []
    for p, vectors in zip(batch, embedded, strict=True):
        existing = records.find(conn, p.id)
        if existing is None:
            key = records.insert(conn, p)
            pending[key] = p.content
            replace_vectors(conn, key, vectors)
        else:
            if existing.namespace != p.namespace:
                raise taken_elsewhere(p.id)
            key = existing.key
            # A new session moves the memory to another dialog: its session
            # context (and its old neighbours') must be re-derived.
            moved = _session_of(conn, key) != p.session_id
            records.replace(conn, key, p, existing.created_at)
            if existing.forgotten or existing.content != p.content or key in pending or moved:
                stale.append(key)
                pending[key] = p.content
                replace_vectors(conn, key, vectors)
            elif vectors is not None and _differ(conn, key, vectors):
                # Same words, other vectors: a caller-given vector changed (LlamaIndex
                # embeds metadata too) or the embedder did; the postings stay.
                replace_vectors(conn, key, vectors)
        keys.append(key)
    for key in stale:
        lexical.remove(conn, key, version)
    lexical.add(conn, list(pending.items()), version)
    _link_graph(conn, batch, keys, replace=True)
    stored = records.select_by_keys(conn, keys)
    return [stored[key] for key in keys]


def _session_of(conn: apsw.Connection, key: int) -> str | None:
    place = sessions.places(conn, [key]).get(key)
    return None if place is None else place.session_id


def _differ(conn: apsw.Connection, key: int, vectors: Embedded) -> bool:
    """Whether ``vectors`` are not exactly the memory's stored vectors."""
    stored = vector_rows.rows_of(conn, key)
    fresh = [(s, e, b) for (s, e), b in zip(vectors.spans, vectors.blobs(), strict=True)]
    return stored != fresh


def replace_vectors(conn: apsw.Connection, key: int, vectors: Embedded | None) -> None:
    """Drop a memory's vectors and store ``vectors`` (if any) in their place."""
    vector_rows.remove_memory(conn, key)
    if vectors is not None:
        vector_rows.add(conn, key, vectors.spans, vectors.blobs())


def forget(conn: apsw.Connection, lexical: LexicalIndex, memory_id: str, now: int) -> bool:
    """Tombstone a memory and drop its postings; ``False`` when missing or already forgotten."""
    existing = records.find(conn, memory_id)
    if existing is None or existing.forgotten:
        return False
    version = records.next_write_seq(conn)
    records.mark_forgotten(conn, existing.key, now)
    lexical.remove(conn, existing.key, version)
    vector_rows.remove_memory(conn, existing.key)
    drop_fragments(conn, existing.key)
    return True


def delete(conn: apsw.Connection, lexical: LexicalIndex, memory_id: str) -> bool:
    """Remove a memory at once, with its postings; ``False`` when missing."""
    existing = records.find(conn, memory_id)
    if existing is None:
        return False
    delete_keys(conn, lexical, [existing.key])
    return True


def delete_keys(conn: apsw.Connection, lexical: LexicalIndex, keys: Sequence[int]) -> None:
    """Remove memories at once: row, tags, postings, vectors, entities and relations."""
    version = records.next_write_seq(conn)
    for key in keys:
        lexical.remove(conn, key, version)
        vector_rows.remove_memory(conn, key)
        drop_fragments(conn, key)
        graph.drop_memory(conn, key)
        records.delete(conn, key)


def drop_fragments(conn: apsw.Connection, key: int) -> None:
    """Remove a memory's fragments (and where they came from) in the caller's transaction."""
    vector_rows.remove_memory(conn, key, vector_rows.FRAGMENTS)
    fragment_rows.set_source(conn, key, None)
