"""The similarity each LlamaIndex query mode reports: the engine's ``Hit.score``.

A node's similarity (``NodeWithScore.score``) is the estimated probability, in
[0, 1], that it is relevant to the query, as the engine scores the recall that
found it: ``DEFAULT`` and ``MMR`` run the vector channel, ``TEXT_SEARCH`` and
``SPARSE`` (and every mode without a query embedding) the text channel, and
``HYBRID`` without ``alpha`` the engine's calibrated fusion of both (``alpha``
0 and 1 are the text and vector channels). So LlamaIndex's
``SimilarityPostprocessor(similarity_cutoff=p)`` keeps the nodes whose
probability is at least ``p``, in every mode, and scores compare across
queries. ``DEFAULT``, text and ``HYBRID`` are ranked by the score; ``MMR`` by
diversity, so there a lower-ranked node can score higher.

``HYBRID`` with ``0 < alpha < 1`` fuses the two channels' lists by weighted
reciprocal rank fusion; a node reports the higher of its two channel
probabilities (the evidence of its stronger channel, not a calibrated fusion:
leave ``alpha`` unset for that).
"""

from __future__ import annotations

from embedmind import Memory
from embedmind.fusion import RRF_K

Found = list[tuple[Memory, float]]


def weighted_rrf(semantic: Found, lexical: Found, alpha: float, k: int) -> Found:
    """The ``k`` best of both lists by weighted reciprocal rank fusion (Cormack et al. 2009).

    ``alpha`` weights the vector list and ``1 - alpha`` the text list; the
    constant is the engine's ``RRF_K`` = 60, as in the paper. Each node keeps
    the higher of the scores its lists gave it.
    """
    fused: dict[str, float] = {}
    best: dict[str, tuple[Memory, float]] = {}
    for weight, found in ((alpha, semantic), (1.0 - alpha, lexical)):
        for rank, (memory, score) in enumerate(found, start=1):
            fused[memory.id] = fused.get(memory.id, 0.0) + weight / (RRF_K + rank)
            if memory.id not in best or score > best[memory.id][1]:
                best[memory.id] = (memory, score)
    order = sorted(fused.items(), key=lambda item: -item[1])[:k]
    return [best[memory_id] for memory_id, _ in order]
