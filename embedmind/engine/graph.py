"""Graph and versioned knowledge over a backend session: relations, entities, lineage.

Relations and entities are navigated here; supersession chains are walked
both ways (the Go seed's ``PredecessorIDs`` backwards, ``superseded_by``
forwards); a superseded or contradicted memory can be restored; confidence
is set in place, and a contradiction keeps the old confidence and the
contradicting id for audit until it is restored. Reads open one read session
each; changes go through the commit path (:mod:`embedmind.engine.commit`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from embedmind.backend.protocol import Backend, Records
from embedmind.checks import is_int, no_surrogates
from embedmind.drafts import confidence_value
from embedmind.engine.commit import CommitPath, Committed, Transaction, changed
from embedmind.errors import InvalidInputError, NotFoundError
from embedmind.ids import validate_id
from embedmind.model import Lineage, Memory, Related
from embedmind.timestamps import resolve_now

MAX_DEPTH = 3


def related(backend: Backend, id: str) -> list[Related]:
    """Memories related to ``id`` both ways (see :meth:`embedmind.Store.related`)."""
    with backend.read() as session:
        key = live_key(session.records, id)
        edges = session.graph.edges(key)
        memories = session.records.load([e.other for e in edges])
    return [Related(memories[e.other], e.kind, e.outgoing) for e in edges]


def neighbors(backend: Backend, id: str, depth: int, kinds: Sequence[str] | None) -> list[Related]:
    """Memories within ``depth`` hops of ``id``, nearest first (breadth first)."""
    if not is_int(depth) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidInputError("depth", f"expected an int within 1-{MAX_DEPTH}")
    if kinds is not None and (
        isinstance(kinds, str)
        or not isinstance(kinds, Sequence)
        or not all(isinstance(k, str) for k in kinds)
    ):
        # A bare str would silently become a set of its characters.
        raise InvalidInputError("kinds", "expected a list of relation kinds")
    allowed = None if kinds is None else set(kinds)
    with backend.read() as session:
        start = live_key(session.records, id)
        seen = {start}
        frontier = [start]
        found: list[tuple[int, str, bool, int]] = []
        for hop in range(1, depth + 1):
            following = []
            for key in frontier:
                for edge in session.graph.edges(key):
                    if edge.other in seen or (allowed is not None and edge.kind not in allowed):
                        continue
                    seen.add(edge.other)
                    following.append(edge.other)
                    found.append((edge.other, edge.kind, edge.outgoing, hop))
            frontier = following
        memories = session.records.load([f[0] for f in found])
    return [Related(memories[k], kind, out, hop) for k, kind, out, hop in found]


def entity_members(backend: Backend, name: str) -> list[Memory]:
    """Live memories carrying the entity ``name``, in time order."""
    if not isinstance(name, str):
        raise InvalidInputError("name", "expected a str")
    no_surrogates(name, "name")  # bound as UTF-8: a lone surrogate is a raw error in SQLite
    with backend.read() as session:
        keys = session.graph.entity_members(name)
        memories = session.records.load(keys)
    return [memories[k] for k in keys]


def entities_of(backend: Backend, id: str) -> list[str]:
    """The entity names of a live memory, sorted."""
    with backend.read() as session:
        return session.graph.entity_names(live_key(session.records, id))


def lineage(backend: Backend, id: str) -> Lineage:
    """The supersession chain around ``id``: older versions, then newer ones."""
    with backend.read() as session:
        live_key(session.records, id)
        older: list[str] = []
        frontier = [id]
        seen = {id}
        while frontier:  # breadth first: a merge can replace several at once
            step = []
            for current in frontier:
                for _, previous in session.graph.predecessors(current):
                    if previous not in seen:
                        seen.add(previous)
                        step.append(previous)
            older += step
            frontier = step
        newer: list[str] = []
        current_memory = session.records.load_ids([id]).get(id)
        while current_memory is not None and current_memory.superseded_by is not None:
            following = current_memory.superseded_by
            if following in seen:
                break
            seen.add(following)
            newer.append(following)
            current_memory = session.records.load_ids([following]).get(following)
        found = session.records.load_ids(older + newer)
    return Lineage(
        tuple(found[i] for i in older if i in found),
        tuple(found[i] for i in newer if i in found),
    )


def restore(commit: CommitPath, id: str, now: _dt.datetime | None) -> Memory:
    """Clear supersession and contradiction of a live memory."""
    at = resolve_now(now)
    with commit.write() as tx:
        key = live_key(tx.session.records, id)
        tx.session.graph.restore(key, at)
        return _updated(tx, "restore", key)


def mark_contradicted(
    commit: CommitPath, id: str, by: str, confidence: float, now: _dt.datetime | None
) -> Memory:
    """End ``id``'s validity now, keeping its confidence and ``by`` for audit."""
    at = resolve_now(now)
    level = confidence_value(confidence)
    with commit.write() as tx:
        key = live_key(tx.session.records, id)
        live_key(tx.session.records, by)
        tx.session.graph.mark_contradicted(key, validate_id(by, "by"), level, at)
        return _updated(tx, "mark_contradicted", key)


def set_confidence(
    commit: CommitPath, id: str, confidence: float, now: _dt.datetime | None
) -> Memory:
    """Set a live memory's confidence in place."""
    at = resolve_now(now)
    level = confidence_value(confidence)
    with commit.write() as tx:
        key = live_key(tx.session.records, id)
        tx.session.graph.set_confidence(key, level, at)
        return _updated(tx, "set_confidence", key)


def _updated(tx: Transaction, op: str, key: int) -> Memory:
    """Record a memory changed in place and return it as it is now."""
    tx.record(Committed(op, updated=changed(tx.session.records, [key])))
    return tx.session.records.load([key])[key]


def live_key(records: Records, memory_id: str) -> int:
    """The key of the live memory ``memory_id``.

    Raises:
        NotFoundError: When it does not exist or was forgotten.
    """
    existing = records.find(validate_id(memory_id))
    if existing is None or existing.forgotten:
        raise NotFoundError(memory_id)
    return existing.key
