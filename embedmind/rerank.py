"""Vector reranking of the lexical list: the episodic seed's three modes.

``alpha`` picks the mode (the seed's ``search_with_rerank``):

- ``alpha >= 2`` — protected pool: the lexical top ``k`` is reordered by
  cosine. Membership is fixed, so recall@k is preserved by construction.
  Recall passes the whole pool (the fusion depth) as ``k``, so that the
  answer does not depend on how many hits were asked for.
- ``1 <= alpha < 2`` — tie-breaker: only adjacent candidates whose
  normalised BM25 scores are within δ = 0.05 swap, when the lower one has the
  higher cosine.
- ``alpha < 1`` — blend: ``α·bm25_norm + (1-α)·cosine`` over the pool.

``bm25_norm`` is the BM25 score divided by the pool's best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TIE_DELTA = 0.05


def rerank(
    lexical: Sequence[tuple[int, float]], cosines: Mapping[int, float], alpha: float, k: int
) -> list[tuple[int, float]]:
    """Rerank ``(key, bm25)`` best first; return ``(key, score)`` best first, at most ``k``.

    Scores are cosines (protected top-k), normalised BM25 (tie-breaker), or the
    blend. A memory without a vector counts as cosine 0.
    """
    if not lexical:
        return []
    top = max(score for _, score in lexical) or 1.0
    norm = [(key, score / top) for key, score in lexical]
    cos = [cosines.get(key, 0.0) for key, _ in norm]
    if alpha >= 2.0:
        head = sorted(range(min(k, len(norm))), key=lambda i: (-cos[i], i))
        return [(norm[i][0], cos[i]) for i in head]
    if alpha >= 1.0:
        order = list(range(len(norm)))
        swapped = True
        while swapped:
            swapped = False
            for j in range(len(order) - 1):
                a, b = order[j], order[j + 1]
                if abs(norm[a][1] - norm[b][1]) < TIE_DELTA and cos[b] > cos[a]:
                    order[j], order[j + 1] = b, a
                    swapped = True
        return [norm[i] for i in order[:k]]
    blended = [(key, alpha * n + (1.0 - alpha) * c) for (key, n), c in zip(norm, cos, strict=True)]
    return sorted(blended, key=lambda item: -item[1])[:k]
