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

from embedmind.errors import InvalidInputError, NotFoundError
from embedmind.ids import validate_id
from embedmind.lexical.index import LexicalIndex
from embedmind.model import Memory, NamespaceActivity, NamespaceLink, Tier
from embedmind.namespaces import SUBTREE_SUFFIX, normalize_namespace, scope_items
from embedmind.storage import lifecycle, records
from embedmind.storage.database import Database
from embedmind.timestamps import duration_micros, from_micros, in_range, resolve_now, to_micros
from embedmind.writes import delete_keys

DURABLE_TIERS = (Tier.SEMANTIC.value, Tier.PROCEDURAL.value)
"""What a namespace link grants when it names no tiers (the Go seed's default)."""
MAX_SWEEP = 100_000


class LifecycleMethods:
    """Mixed into :class:`embedmind.Store`; relies on its ``_db`` and ``_lexical``."""

    _db: Database
    _lexical: LexicalIndex
    _metrics: Any

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
        with self._db.write() as conn:
            keys = [e.key for e in records.find_many(conn, wanted).values() if not e.forgotten]
            return lifecycle.reinforce(conn, keys, at, expiry)

    def sweep_expired(self, *, now: _dt.datetime | None = None, limit: int = 1_000) -> int:
        """Delete memories whose TTL passed at ``now``, at most ``limit``.

        A memory whose TTL was slid (by :meth:`reinforce`) after it was listed
        is kept: each deletion re-checks the expiry in its own transaction.

        Returns:
            How many memories were deleted.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SWEEP:
            raise InvalidInputError("limit", f"expected an int within 1-{MAX_SWEEP}")
        at = resolve_now(now)
        with self._db.read() as conn:
            listed = lifecycle.expired(conn, at, limit)
        swept = 0
        for key, _, tier in listed:
            with self._db.write() as conn:
                if not lifecycle.still_expired(conn, key, at):
                    continue
                delete_keys(conn, self._lexical, [key])
            swept += 1
            emit(self._metrics, "sweep_expired", tier)
        if swept:
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
        expiry = None if expires_at is None else to_micros(expires_at, "expires_at")
        at = resolve_now(now)
        with self._db.write() as conn:
            existing = records.find(conn, validate_id(id))
            if existing is None or existing.forgotten:
                raise NotFoundError(id)
            lifecycle.retier(conn, existing.key, name, expiry, at)
            return records.select_by_keys(conn, [existing.key])[existing.key]

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
        with self._db.write() as conn:
            keys = lifecycle.keys_in_namespace(conn, name)
            delete_keys(conn, self._lexical, keys)
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
        with self._db.write() as conn:
            found = records.find_many(conn, wanted)
            keys = [e.key for e in found.values() if e.namespace == source]
            return lifecycle.move(conn, keys, target, at)

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
        with self._db.write() as conn:
            moved = lifecycle.move(conn, lifecycle.keys_in_namespace(conn, source), target, at)
            if source != target:
                lifecycle.rename_link_endpoints(conn, source, target)
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
        _no_surrogates(note, "note")
        created = resolve_now(created_at)
        with self._db.write() as conn:
            lifecycle.put_link(conn, source, target, names, note, created)
        return NamespaceLink(source, target, _tiers(names), note, from_micros(created))

    def unlink(self, src: str, dst: str) -> bool:
        """Remove the link ``src -> dst``; whether it existed."""
        source, target = normalize_namespace(src, "src"), normalize_namespace(dst, "dst")
        with self._db.write() as conn:
            return lifecycle.delete_link(conn, source, target)

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


def _no_surrogates(text: str, field: str) -> None:
    # Stored as UTF-8: a lone surrogate would fail inside the transaction as a raw error.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(field, "contains unpaired surrogate characters") from None


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


def emit(metrics: Any, event: str, *args: Any) -> None:
    """Call the metrics observer's ``event`` method if it has one."""
    hook = getattr(metrics, event, None)
    if callable(hook):
        hook(*args)
