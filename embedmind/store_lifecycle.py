"""Lifecycle and namespace methods of :class:`embedmind.Store`.

The work is done in :mod:`embedmind.engine.lifecycle`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from embedmind.engine import lifecycle
from embedmind.facade import Facade
from embedmind.model import Memory, NamespaceActivity, NamespaceLink, Tier


class LifecycleMethods(Facade):
    """Mixed into :class:`embedmind.Store`."""

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
        return lifecycle.reinforce(self._engine, ids, now=now, extend_ttl=extend_ttl)

    def sweep_expired(self, *, now: _dt.datetime | None = None, limit: int = 1_000) -> int:
        """Delete memories whose TTL passed at ``now``, at most ``limit``.

        A memory whose TTL was slid (by :meth:`reinforce`) after it was listed
        is kept: each deletion re-checks the expiry in its own transaction.

        Returns:
            How many memories were deleted.
        """
        return lifecycle.sweep_expired(self._engine, now=now, limit=limit)

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
        return lifecycle.retier(self._engine, id, tier, expires_at=expires_at, now=now)

    def namespaces(self) -> list[NamespaceActivity]:
        """Namespaces holding live memories, with their count and last write."""
        return lifecycle.namespaces(self._engine)

    def delete_namespace(self, namespace: str) -> int:
        """Delete every memory of one namespace (exactly it, not its subtree).

        Returns:
            How many memories were deleted.
        """
        return lifecycle.delete_namespace(self._engine, namespace)

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
        return lifecycle.move(self._engine, ids, from_namespace, to_namespace, now=now)

    def rename_namespace(self, old: str, new: str, *, now: _dt.datetime | None = None) -> int:
        """Move every memory of ``old`` to ``new`` and rewrite its links.

        A rewritten link that collides with one ``new`` already has is dropped:
        the target's own grant is never silently widened.

        Returns:
            How many memories moved.
        """
        return lifecycle.rename_namespace(self._engine, old, new, now=now)

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
        return lifecycle.link_namespaces(
            self._engine, src, dst, tiers=tiers, note=note, created_at=created_at
        )

    def unlink(self, src: str, dst: str) -> bool:
        """Remove the link ``src -> dst``; whether it existed."""
        return lifecycle.unlink(self._engine, src, dst)

    def links(self, src: str | None = None) -> list[NamespaceLink]:
        """Links from ``src`` (or all), ordered by source and destination."""
        return lifecycle.links(self._engine, src)
