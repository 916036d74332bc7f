"""Graph and versioned-knowledge methods of :class:`embedmind.Store`.

The work is done in :mod:`embedmind.engine.graph`.

Each method is the public signature and docstring, and one call into the engine.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from embedmind.engine import graph
from embedmind.facade import Facade
from embedmind.model import Lineage, Memory, Related


class GraphMethods(Facade):
    """Mixed into :class:`embedmind.Store`."""

    def related(self, id: str) -> list[Related]:
        """Memories related to ``id`` by an explicit relation, both directions.

        Forgotten neighbours disappear; superseded ones stay (the
        ``"supersedes"`` edge is how version history is navigated).

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        return graph.related(self._engine.backend, id)

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
        return graph.neighbors(self._engine.backend, id, depth, kinds)

    def entity_members(self, name: str) -> list[Memory]:
        """Live memories tagged with the entity ``name``, in time order."""
        return graph.entity_members(self._engine.backend, name)

    def entities_of(self, id: str) -> list[str]:
        """The entity names of a memory, sorted.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        return graph.entities_of(self._engine.backend, id)

    def lineage(self, id: str) -> Lineage:
        """Walk the supersession chain around ``id`` in both directions.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        return graph.lineage(self._engine.backend, id)

    def restore(self, id: str, *, now: _dt.datetime | None = None) -> Memory:
        """Make a superseded or contradicted memory current again.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
        """
        return graph.restore(self._engine.commit, id, now)

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
        return graph.mark_contradicted(self._engine.commit, id, by, confidence, now)

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
        return graph.set_confidence(self._engine.commit, id, confidence, now)
