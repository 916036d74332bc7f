"""Session context: how a memory's index terms combine its own, its alias field and its neighbours'.

Both backends index a memory with a ``session_id`` (when the store's switch is
on) as ``WEIGHT_OWN × its own terms + its alias field + WEIGHT_NEIGHBOUR ×
(the previous turn's + the next turn's own terms)``; where the neighbours come
from and how the postings are kept is each backend's (the SQLite backend's
:mod:`embedmind.backend.sqlite.lexical.context`, the PostgreSQL backend's
:mod:`embedmind.backend.postgres.lexical`). One rule, so a store answers alike
on either.
"""

from __future__ import annotations

from collections import Counter

from embedmind.lexical.aliases import WEIGHT_OWN, Fields

WEIGHT_NEIGHBOUR = 1
"""Weight of a dialog neighbour's own terms (a memory's own weigh :data:`WEIGHT_OWN`)."""

Links = tuple[int | None, int | None]
"""A document's ``(previous, next)`` dialog neighbours."""

__all__ = ["WEIGHT_NEIGHBOUR", "WEIGHT_OWN", "Links", "combined"]


def combined(own: dict[int, Fields], key: int, links: Links) -> Counter[str]:
    """``WEIGHT_OWN × own(key) + alias(key) + WEIGHT_NEIGHBOUR × own(each neighbour)``.

    A memory alone in its session has no context: it is indexed as without a
    session (:meth:`Fields.alone`: its own terms once when it has no alias
    field), so it scores exactly as plain BM25 would.
    """
    if all(other is None for other in links):
        return own[key].alone()
    counts: Counter[str] = Counter()
    for term, tf in own[key].own.items():
        counts[term] += WEIGHT_OWN * tf
    counts.update(own[key].alias)
    for other in links:
        if other is not None:
            for term, tf in own[other].context().items():
                counts[term] += WEIGHT_NEIGHBOUR * tf
    return counts
