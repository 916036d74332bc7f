"""The similarity each LlamaIndex query mode reports: always in [0, 1], higher is better.

- Modes that carry a query embedding (``DEFAULT``, ``HYBRID`` with
  ``0 < alpha``, ``MMR``): the cosine of query and node, clipped at 0, as
  LlamaIndex's own vector stores report similarity (an exact match scores 1,
  an unrelated node about 0). ``DEFAULT`` is ranked by it; ``HYBRID`` is
  ranked by weighted reciprocal rank fusion and ``MMR`` by diversity, so in
  those modes the score need not fall with rank.
- Text modes (``TEXT_SEARCH``, ``SPARSE``, ``HYBRID`` with ``alpha`` 0, or no
  query embedding): the node's BM25 score divided by the best one of the same
  query, so the top hit scores 1 and scores fall with rank; compare them
  within one query, not across queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embedmind import Memory, Store
from embedmind.fusion import RRF_K

Found = list[tuple[Memory, float]]


def unit_cosine(score: float) -> float:
    """A cosine similarity clipped to [0, 1]."""
    return max(0.0, min(1.0, float(score)))


def relative(found: Found) -> Found:
    """BM25 scores divided by the best one (best first), so they lie in [0, 1]."""
    top = found[0][1] if found else 0.0
    return [(memory, score / top if top > 0 else 0.0) for memory, score in found]


def weighted_rrf(semantic: Found, lexical: Found, alpha: float, k: int) -> list[Memory]:
    """The ``k`` best of both lists by weighted reciprocal rank fusion (Cormack et al. 2009).

    ``alpha`` weights the vector list and ``1 - alpha`` the text list; the
    constant is the engine's ``RRF_K`` = 60, as in the paper.
    """
    scores: dict[str, float] = {}
    memories: dict[str, Memory] = {}
    for weight, found in ((alpha, semantic), (1.0 - alpha, lexical)):
        for rank, (memory, _) in enumerate(found, start=1):
            scores[memory.id] = scores.get(memory.id, 0.0) + weight / (RRF_K + rank)
            memories[memory.id] = memory
    best = sorted(scores.items(), key=lambda item: -item[1])[:k]
    return [memories[memory_id] for memory_id, _ in best]


def cosines(store: Store, vector: Sequence[float], memories: list[Memory]) -> Found:
    """Each memory with the clipped cosine of its stored vector and ``vector``."""
    stored = store.vectors([m.id for m in memories])
    query = np.asarray(vector, dtype=np.float32)
    query /= np.linalg.norm(query) or 1.0
    found: Found = []
    for memory in memories:
        row = stored.get(memory.id)
        found.append((memory, 0.0 if row is None else unit_cosine(float(row @ query))))
    return found
