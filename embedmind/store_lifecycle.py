"""Lifecycle and namespace methods of :class:`embedmind.Store` (the Go seed's service calls).

Reinforcement bumps access counts and may slide TTLs; the expiry sweep deletes
only memories whose TTL is still past when it reaches them (the seed's
``DeleteIfExpiredBefore``, so a memory reinforced meanwhile survives);
tiers change in place; namespaces are listed with their activity, deleted,
moved and renamed; namespace links grant reads of another namespace's tiers.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from embedmind.backend.sqlite import lifecycle_rows as lifecycle
from embedmind.backend.sqlite import records
from embedmind.backend.sqlite import session_rows as sessions
from embedmind.backend.sqlite.database import Database
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.checks import is_int, no_surrogates
from embedmind.engine.commit import Changed, CommitPath, Committed, changed, emit
from embedmind.errors import InvalidInputError, NotFoundError
from embedmind.ids import validate_id
from embedmind.model import Memory, NamespaceActivity, NamespaceLink, Tier
from embedmind.query.scope import SUBTREE_SUFFIX, normalize_namespace, scope_items
from embedmind.timestamps import (
    duration_micros,
    from_micros,
    in_range,
    optional_to_micros,
    resolve_now,
)
from embedmind.writes import delete_keys

DURABLE_TIERS = (Tier.SEMANTIC.value, Tier.PROCEDURAL.value)
"""What a namespace link grants when it names no tiers (the Go seed's default)."""
MAX_SWEEP = 100_000


class LifecycleMethods:
    """Mixed into :class:`embedmind.Store`; relies on its ``_db``, ``_lexical`` and ``_commit``."""

    _db: Database
    _lexical: LexicalIndex
    _metrics: Any
    _commit: CommitPath

    def reinforce(
        self,
        ids: Sequence[str],
        *,
        now: _dt.datetime | None = None,
        extend_ttl: _dt.timedelta | None = None,
    ) -> int:
        """Record that memories were just used: bump access counts and last access.

        Args:
            ids: The memories (missing ones are ignored).
            now: The access instant.
            extend_ttl: Slide the TTL of memories that expire to ``now + extend_ttl``
                (never shortening it), so often-used short-term memories stay.

        Returns:
            How many memories were reinforced.
        """
        at = resolve_now(now)
        expiry = (
            None
            if extend_ttl is None
            else in_range(at + duration_micros(extend_ttl, "extend_ttl"), "extend_ttl")
        )
        wanted = [validate_id(i, "ids") for i in _list(ids, "ids")]
        with self._commit.write() as tx:
            found = records.find_many(tx.conn, wanted).values()
            keys = sorted(e.key for e in found if not e.forgotten)
            reinforced = lifecycle.reinforce(tx.conn, keys, at, expiry)
            tx.record(Committed("reinforce", updated=changed(tx.conn, keys)))
        return reinforced

    def sweep_expired(self, *, now: _dt.datetime | None = None, limit: int = 1_000) -> int:
        """Delete memories whose TTL passed at ``now``, at most ``limit``.

        A memory whose TTL was slid (by :meth:`reinforce`) after it was listed
        is kept: each deletion re-checks the expiry in its own transaction.

        Returns:
            How many memories were deleted.
        """
        if not is_int(limit) or not 1 <= limit <= MAX_SWEEP:
            raise InvalidInputError("limit", f"expected an int within 1-{MAX_SWEEP}")
        at = resolve_now(now)
        with self._db.read() as conn:
            listed = lifecycle.expired(conn, at, limit)
        swept = 0
        for key, memory_id, tier in listed:
            with self._commit.write() as tx:
                if not lifecycle.still_expired(tx.conn, key, at):
                    continue
                namespace = changed(tx.conn, [key])[0].namespace
                delete_keys(tx.conn, self._lexical, [key])
                tx.record(Committed("sweep", expired=(Changed(memory_id, namespace, tier),)))
            swept += 1
        if swept:  # a gauge, read once per sweep rather than counted per commit
            with self._db.read() as conn:
                for tier_name, live in records.statistics(conn, at)["by_tier"].items():
                    emit(self._metrics, "active_by_tier", tier_name, live)
        return swept

    def retier(
        self,
        id: str,
        tier: Tier | str,
        *,
        expires_at: _dt.datetime | None = None,
        now: _dt.datetime | None = None,
    ) -> Memory:
        """Change a memory's tier and expiry in place (retro-tiering).

        The expiry is *set*, not merged: ``expires_at=None`` (the default) makes
        the memory durable, as the seed's ``Retier`` does when demoting or
        promoting; pass ``memory.expires_at`` to keep the current one.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        try:
            name = Tier(tier).value
        except ValueError:
            raise InvalidInputError("tier", f"{tier!r} is not a tier") from None
        expiry = optional_to_micros(expires_at, "expires_at")
        at = resolve_now(now)
        with self._commit.write() as tx:
            existing = records.find(tx.conn, validate_id(id))
            if existing is None or existing.forgotten:
                raise NotFoundError(id)
            lifecycle.retier(tx.conn, existing.key, name, expiry, at)
            memory = records.select_by_keys(tx.conn, [existing.key])[existing.key]
            tx.record(Committed("retier", placed=changed(tx.conn, [existing.key])))
        return memory

    def namespaces(self) -> list[NamespaceActivity]:
        """Namespaces holding live memories, with their count and last write."""
        with self._db.read() as conn:
            rows = lifecycle.namespace_activity(conn)
        return [NamespaceActivity(n, c, from_micros(w)) for n, c, w in rows]

    def delete_namespace(self, namespace: str) -> int:
        """Delete every memory of one namespace (exactly it, not its subtree).

        Returns:
            How many memories were deleted.
        """
        name = normalize_namespace(namespace)
        with self._commit.write() as tx:
            keys = lifecycle.keys_in_namespace(tx.conn, name)
            gone = changed(tx.conn, keys)
            delete_keys(tx.conn, self._lexical, keys)
            tx.record(Committed("delete_namespace", deleted=tuple(c.id for c in gone)))
        return len(keys)

    def move(
        self,
        ids: Sequence[str],
        from_namespace: str,
        to_namespace: str,
        *,
        now: _dt.datetime | None = None,
    ) -> int:
        """Move memories from one namespace to another (ids elsewhere are skipped).

        Returns:
            How many memories moved.
        """
        source = normalize_namespace(from_namespace, "from_namespace")
        target = normalize_namespace(to_namespace, "to_namespace")
        wanted = [validate_id(i, "ids") for i in _list(ids, "ids")]
        at = resolve_now(now)
        with self._commit.write() as tx:
            found = records.find_many(tx.conn, wanted)
            keys = sorted(e.key for e in found.values() if e.namespace == source)
            moved = self._move_keeping_context(tx.conn, keys, target, at, source != target)
            tx.record(Committed("move", placed=changed(tx.conn, keys, live=True)))
        return moved

    def rename_namespace(self, old: str, new: str, *, now: _dt.datetime | None = None) -> int:
        """Move every memory of ``old`` to ``new`` and rewrite its links.

        A rewritten link that collides with one ``new`` already has is dropped:
        the target's own grant is never silently widened.

        Returns:
            How many memories moved.
        """
        source = normalize_namespace(old, "old")
        target = normalize_namespace(new, "new")
        at = resolve_now(now)
        with self._commit.write() as tx:
            keys = lifecycle.keys_in_namespace(tx.conn, source)
            moved = self._move_keeping_context(tx.conn, keys, target, at, source != target)
            if source != target:
                lifecycle.rename_link_endpoints(tx.conn, source, target)
            tx.record(Committed("rename_namespace", placed=changed(tx.conn, keys, live=True)))
        return moved

    def _move_keeping_context(
        self, conn: Any, keys: Sequence[int], target: str, at: int, elsewhere: bool
    ) -> int:
        """Move rows to ``target``; with session context, re-index both dialogs around them.

        A dialog is a ``(namespace, session_id)``: a memory that moves leaves
        its neighbours in the old one and gains new ones, so its postings and
        theirs are taken out before the move and put back after it.
        """
        if not elsewhere or not sessions.enabled(conn):
            return lifecycle.move(conn, keys, target, at)
        version = records.next_write_seq(conn)
        detached = self._lexical.detach(conn, list(sessions.places(conn, keys)), version)
        moved = lifecycle.move(conn, keys, target, at)
        self._lexical.attach(conn, detached, version)
        return moved

    def link_namespaces(
        self,
        src: str,
        dst: str,
        *,
        tiers: Sequence[Tier | str] | None = None,
        note: str = "",
        created_at: _dt.datetime | None = None,
    ) -> NamespaceLink:
        """Let reads of ``src`` with ``follow_links=True`` also see ``dst`` (its ``tiers``)."""
        source = normalize_namespace(src, "src")
        target = normalize_namespace(dst, "dst")
        names = None if tiers is None else [_tier(t) for t in _list(tiers, "tiers")]
        if not isinstance(note, str):
            raise InvalidInputError("note", "expected a str")
        no_surrogates(note, "note")
        created = resolve_now(created_at)
        with self._commit.write() as tx:  # a link changes no memory: nothing to record
            lifecycle.put_link(tx.conn, source, target, names, note, created)
        return NamespaceLink(source, target, _tiers(names), note, from_micros(created))

    def unlink(self, src: str, dst: str) -> bool:
        """Remove the link ``src -> dst``; whether it existed."""
        source, target = normalize_namespace(src, "src"), normalize_namespace(dst, "dst")
        with self._commit.write() as tx:  # a link changes no memory: nothing to record
            return lifecycle.delete_link(tx.conn, source, target)

    def links(self, src: str | None = None) -> list[NamespaceLink]:
        """Links from ``src`` (or all), ordered by source and destination."""
        source = None if src is None else normalize_namespace(src, "src")
        with self._db.read() as conn:
            rows = lifecycle.links(conn, source)
        return [NamespaceLink(s, d, _tiers(t), n, from_micros(c)) for s, d, t, n, c in rows]

    def _grants(self, namespace: object) -> list[tuple[str, tuple[str, ...]]]:
        """The ``(namespace, tiers)`` that links from the exact namespaces in scope grant."""
        # Compared in NFC, as links are stored: an NFD spelling of a namespace is
        # the same namespace and must follow the same links.
        sources = {
            normalize_namespace(item)
            for item in scope_items(namespace)
            if not (isinstance(item, str) and item.endswith(SUBTREE_SUFFIX))
        }
        grants = []
        for link in self.links():
            if link.src in sources:
                tiers = DURABLE_TIERS if link.tiers is None else tuple(t.value for t in link.tiers)
                grants.append((link.dst, tiers))
        return grants


def _list(values: object, field: str) -> list[Any]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInputError(field, "expected a list")
    return list(values)


def _tier(value: object) -> str:
    try:
        return Tier(value).value
    except ValueError:
        raise InvalidInputError("tiers", f"{value!r} is not a tier") from None


def _tiers(names: Sequence[str] | None) -> tuple[Tier, ...] | None:
    return None if names is None else tuple(Tier(n) for n in names)
