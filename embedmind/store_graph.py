"""Graph and versioned-knowledge methods of :class:`embedmind.Store`.

Relations and entities are navigated here; supersession chains are walked
both ways (the Go seed's ``PredecessorIDs`` backwards, ``superseded_by``
forwards); a superseded or contradicted memory can be restored; confidence
is set in place, and a contradiction keeps the old confidence and the
contradicting id for audit until it is restored.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

import apsw

from embedmind.backend.sqlite import graph_rows as graph
from embedmind.backend.sqlite import records
from embedmind.backend.sqlite.database import Database
from embedmind.checks import is_int, no_surrogates
from embedmind.drafts import confidence_value
from embedmind.engine.commit import CommitPath, Committed, Transaction, changed
from embedmind.errors import InvalidInputError, NotFoundError
from embedmind.ids import validate_id
from embedmind.model import Lineage, Memory, Related
from embedmind.timestamps import resolve_now

MAX_DEPTH = 3


class GraphMethods:
    """Mixed into :class:`embedmind.Store`; relies on its ``_db`` and ``_commit``."""

    _db: Database
    _commit: CommitPath

    def related(self, id: str) -> list[Related]:
        """Memories related to ``id`` by an explicit relation, both directions.

        Forgotten neighbours disappear; superseded ones stay (the
        ``"supersedes"`` edge is how version history is navigated).

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        with self._db.read() as conn:
            key = _live_key(conn, id)
            edges = graph.edges(conn, key)
            memories = records.select_by_keys(conn, [e.other for e in edges])
        return [Related(memories[e.other], e.kind, e.outgoing) for e in edges]

    def neighbors(
        self,
        id: str,
        *,
        depth: int = 1,
        kinds: Sequence[str] | None = None,
    ) -> list[Related]:
        """Memories within ``depth`` hops (1-3) of ``id``, nearest first.

        Args:
            id: Where to start.
            depth: How many hops to follow.
            kinds: Follow only relations of these kinds (default: all).

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
            InvalidInputError: When ``depth`` is outside 1-3.
        """
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
        with self._db.read() as conn:
            start = _live_key(conn, id)
            seen = {start}
            frontier = [start]
            found: list[tuple[int, str, bool, int]] = []
            for hop in range(1, depth + 1):
                following = []
                for key in frontier:
                    for edge in graph.edges(conn, key):
                        if edge.other in seen or (allowed is not None and edge.kind not in allowed):
                            continue
                        seen.add(edge.other)
                        following.append(edge.other)
                        found.append((edge.other, edge.kind, edge.outgoing, hop))
                frontier = following
            memories = records.select_by_keys(conn, [f[0] for f in found])
        return [Related(memories[k], kind, out, hop) for k, kind, out, hop in found]

    def entity_members(self, name: str) -> list[Memory]:
        """Live memories tagged with the entity ``name``, in time order."""
        if not isinstance(name, str):
            raise InvalidInputError("name", "expected a str")
        no_surrogates(name, "name")  # bound as UTF-8: a lone surrogate is a raw error in SQLite
        with self._db.read() as conn:
            keys = graph.entity_member_keys(conn, name)
            memories = records.select_by_keys(conn, keys)
        return [memories[k] for k in keys]

    def entities_of(self, id: str) -> list[str]:
        """The entity names of a memory, sorted.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        with self._db.read() as conn:
            return graph.entity_names(conn, _live_key(conn, id))

    def lineage(self, id: str) -> Lineage:
        """Walk the supersession chain around ``id`` in both directions.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        with self._db.read() as conn:
            _live_key(conn, id)
            older: list[str] = []
            frontier = [id]
            seen = {id}
            while frontier:  # breadth first: a merge can replace several at once
                step = []
                for current in frontier:
                    for _, previous in graph.predecessors(conn, current):
                        if previous not in seen:
                            seen.add(previous)
                            step.append(previous)
                older += step
                frontier = step
            newer: list[str] = []
            current_memory = records.select_by_ids(conn, [id]).get(id)
            while current_memory is not None and current_memory.superseded_by is not None:
                following = current_memory.superseded_by
                if following in seen:
                    break
                seen.add(following)
                newer.append(following)
                current_memory = records.select_by_ids(conn, [following]).get(following)
            found = records.select_by_ids(conn, older + newer)
        return Lineage(
            tuple(found[i] for i in older if i in found),
            tuple(found[i] for i in newer if i in found),
        )

    def restore(self, id: str, *, now: _dt.datetime | None = None) -> Memory:
        """Make a superseded or contradicted memory current again.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        at = resolve_now(now)
        with self._commit.write() as tx:
            key = _live_key(tx.conn, id)
            graph.restore(tx.conn, key, at)
            return _updated(tx, "restore", key)

    def mark_contradicted(
        self,
        id: str,
        *,
        by: str,
        confidence: float = 0.0,
        now: _dt.datetime | None = None,
    ) -> Memory:
        """Record that ``by`` contradicts ``id``: its validity ends now (reversible).

        The fact leaves live recall but stays reachable through ``as_of``; the
        old confidence and the contradicting id are kept until :meth:`restore`.

        Raises:
            NotFoundError: When either memory does not exist or was forgotten.
        """
        at = resolve_now(now)
        level = confidence_value(confidence)
        with self._commit.write() as tx:
            key = _live_key(tx.conn, id)
            _live_key(tx.conn, by)
            graph.mark_contradicted(tx.conn, key, validate_id(by, "by"), level, at)
            return _updated(tx, "mark_contradicted", key)

    def set_confidence(
        self,
        id: str,
        confidence: float,
        *,
        now: _dt.datetime | None = None,
    ) -> Memory:
        """Set a memory's confidence (in [0, 1]) in place.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        at = resolve_now(now)
        level = confidence_value(confidence)
        with self._commit.write() as tx:
            key = _live_key(tx.conn, id)
            graph.set_confidence(tx.conn, key, level, at)
            return _updated(tx, "set_confidence", key)


def _updated(tx: Transaction, op: str, key: int) -> Memory:
    """Record a memory changed in place and return it as it is now."""
    tx.record(Committed(op, updated=changed(tx.conn, [key])))
    return records.select_by_keys(tx.conn, [key])[key]


def _live_key(conn: apsw.Connection, memory_id: str) -> int:
    existing = records.find(conn, validate_id(memory_id))
    if existing is None or existing.forgotten:
        raise NotFoundError(memory_id)
    return existing.key
