"""Latest value: when a query asks for the current value, the newest statement goes first.

The episodic seed's ``is_current_query`` and its post-retrieval chronology:
"where does she live now?" is answered by the last thing said about it, not by
the best-matching of several statements made over time. Retrieval is left
alone; afterwards the *cluster* of the result — its leading hits that scored
about as well as the best one — is put in chronological order, newest first,
in the positions the cluster held. Nothing enters or leaves the result and
hits outside the cluster keep their places.

The cluster, precisely: among the first :data:`SPAN` hits of the ranking
(a fixed window, whatever ``k``), those whose score is at least
:data:`BAND` times the first hit's score. Scores are the ranking's own (fused
RRF scores in hybrid mode, the channel's raw score otherwise), so the band is
"as well supported as the best answer". It is reordered only when it holds two
or more hits. Chronology is ``created_at``, then write order (the memory's
key), both descending, so the reorder is deterministic; and since it depends
only on the first :data:`SPAN` hits, which do not depend on ``k``,
``recall(q, k=j)`` stays the beginning of ``recall(q, k=n)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

SPAN = 5
"""How many leading hits the cluster is drawn from."""
BAND = 0.5
"""A hit is in the cluster when its score is at least this share of the first hit's."""

_CURRENT = re.compile(
    r"\b(?:now|nowadays|currently|current|latest|most\s+recent(?:ly)?|these\s+days|still"
    r"|at\s+the\s+moment|at\s+present|presently|any\s*more|lately)\b",
    re.IGNORECASE,
)


def asks_current(query: str) -> bool:
    """Whether ``query`` asks for the current or latest value of something.

    Example:
        >>> asks_current("Where does she live now?"), asks_current("Where did she live?")
        (True, False)
        >>> asks_current("What is her most recent job?"), asks_current("I know the snow")
        (True, False)
    """
    return _CURRENT.search(query) is not None


def cluster(ranking: Sequence[tuple[int, float]]) -> list[int]:
    """Positions (0-based) of the ranking's cluster: within :data:`SPAN`, within :data:`BAND`.

    Example:
        >>> cluster([(7, 1.0), (8, 0.6), (9, 0.2), (10, 0.55)])
        [0, 1, 3]
    """
    if not ranking:
        return []
    top = ranking[0][1]
    if top <= 0:
        return []
    return [i for i, (_, score) in enumerate(ranking[:SPAN]) if score >= BAND * top]


def newest_first(
    ranking: Sequence[tuple[int, float]], created: Mapping[int, float]
) -> tuple[list[tuple[int, float]], list[int]]:
    """``ranking`` with its cluster in chronological order, newest first; and the cluster.

    Args:
        ranking: ``(key, score)`` best first; each hit keeps its own score.
        created: ``created_at`` (any comparable number) of at least the
            cluster's keys.

    Returns:
        The reordered ranking, and the cluster's keys newest first (empty when
        fewer than two hits form the cluster, and nothing moved).
    """
    positions = cluster(ranking)
    if len(positions) < 2:
        return list(ranking), []
    members = sorted(
        (ranking[i] for i in positions), key=lambda item: (-created[item[0]], -item[0])
    )
    out = list(ranking)
    for i, item in zip(positions, members, strict=True):
        out[i] = item
    return out, [key for key, _ in members]
