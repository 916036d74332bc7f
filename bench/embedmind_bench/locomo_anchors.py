"""Retrievers to hold embedmind's LoCoMo figures against, over the same turns.

- ``bm25s``: Lucene BM25 (k1 = 1.2, b = 0.75) with PyStemmer and English stop
  words, one index per conversation: the lexical anchor (``shared/BENCHMARKS.md``
  has BM25 at recall@10 0.55-0.58 on all ten conversations).
- ``exact``: cosine over the same MiniLM vectors, brute force: the dense anchor.
- ``rrf``: reciprocal rank fusion of the two (k = 60, Cormack et al. 2009),
  the textbook hybrid.

Each returns, per question, the ids of its conversation's best turns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from embedmind_bench.locomo_data import KS, Dataset, Question
from embedmind_bench.optional import load
from embedmind_bench.vectordata import Matrix

RRF_K = 60  # Cormack, Clarke and Büttcher (2009)
Retriever = Callable[[Question], list[str]]


def _by_namespace(data: Dataset) -> dict[str, list[int]]:
    """Positions of the drafts of each conversation."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, draft in enumerate(data.drafts):
        groups[draft.namespace].append(i)
    return groups


def bm25s_retriever(data: Dataset, depth: int = max(KS)) -> tuple[Retriever | None, str]:
    """Build one bm25s index per conversation.

    Args:
        data: The LoCoMo turns and questions.
        depth: How many turns each answer lists.

    Returns:
        ``(retriever, "")``, or ``(None, reason)`` when bm25s or PyStemmer is missing.
    """
    bm25s, reason = load("bm25s")
    stemmer_module, stem_reason = load("Stemmer")
    if bm25s is None or stemmer_module is None:
        return None, reason or stem_reason
    stem = stemmer_module.Stemmer("english").stemWords
    indexes: dict[str, tuple[Any, list[str]]] = {}
    for namespace, positions in _by_namespace(data).items():
        texts = [data.drafts[i].content for i in positions]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False)
        index = bm25s.BM25(k1=1.2, b=0.75)
        index.index(tokens, show_progress=False)
        indexes[namespace] = (index, [data.drafts[i].id or "" for i in positions])

    def retrieve(question: Question) -> list[str]:
        index, ids = indexes[question.namespace]
        tokens = bm25s.tokenize(
            [question.text], stopwords="en", stemmer=stem, return_ids=False, show_progress=False
        )
        if not tokens[0]:
            return []
        k = min(depth, len(ids))
        keys, scores = index.retrieve(tokens, k=k, show_progress=False)
        return [ids[int(key)] for key, score in zip(keys[0], scores[0], strict=True) if score > 0]

    return retrieve, ""


def exact_retriever(
    data: Dataset, vectors: Matrix, query_vectors: dict[str, Matrix], depth: int = max(KS)
) -> Retriever:
    """Rank each conversation's turns by exact cosine to the question.

    Args:
        data: The LoCoMo turns and questions.
        vectors: One unit vector per draft, in draft order.
        query_vectors: Question text -> its unit vector.
        depth: How many turns each answer lists.

    Returns:
        The retriever.
    """
    groups = {ns: np.asarray(pos) for ns, pos in _by_namespace(data).items()}
    ids = [draft.id or "" for draft in data.drafts]

    def retrieve(question: Question) -> list[str]:
        positions = groups[question.namespace]
        scores = vectors[positions] @ query_vectors[question.text]
        best = positions[np.argsort(-scores, kind="stable")[:depth]]
        return [ids[i] for i in best.tolist()]

    return retrieve


def rrf(*retrievers: Retriever) -> Retriever:
    """Fuse retrievers by reciprocal rank: ``score = sum(1 / (RRF_K + rank))``.

    Args:
        *retrievers: The lists to fuse (deeper lists than ``max(KS)`` fuse better).

    Returns:
        A retriever answering the fused top ``max(KS)``.
    """

    def retrieve(question: Question) -> list[str]:
        scores: dict[str, float] = defaultdict(float)
        for retriever in retrievers:
            for rank, turn in enumerate(retriever(question), start=1):
                scores[turn] += 1.0 / (RRF_K + rank)
        ranked: Sequence[str] = sorted(scores, key=lambda t: -scores[t])
        return list(ranked[: max(KS)])

    return retrieve
