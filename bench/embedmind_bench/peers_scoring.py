"""LoCoMo scores of the peers benchmark, with their standard errors.

The means are :func:`.locomo_data.score`'s (recall@k and hit@k per category);
beside each the standard error of the mean over the group's questions
(sample standard deviation over ``sqrt(n)``), so a difference between two
engines can be read against its noise: LoCoMo's categories hold 100-800
questions, and a gap inside about two standard errors is not one to claim.

Example:
    >>> from embedmind_bench.locomo_data import Question
    >>> q = Question("ns", "what pet?", 4, frozenset({"a"}))
    >>> row = score([(q, ["a"]), (q, ["b"])])["overall"]
    >>> row["hit@10"], round(row["hit@10_se"], 3)
    (0.5, 0.5)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from embedmind_bench.locomo_data import CATEGORIES, KS, Question
from embedmind_bench.metrics import hit_at_k, mean_and_error, recall_at_k

FIGURES = tuple(f"{m}@{k}" for m in ("recall", "hit") for k in KS)


def score(ranked: Iterable[tuple[Question, Sequence[str]]]) -> dict[str, dict[str, float]]:
    """Recall@k and hit@k per category and ``overall``, each with its standard error.

    Args:
        ranked: ``(question, ids best first)`` pairs.

    Returns:
        ``{group: {"questions": n, "recall@10": mean, "recall@10_se": error, ...}}``
        for ``overall`` and each category present (the keys of
        :func:`.locomo_data.score` plus one ``_se`` key per figure).
    """
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for question, ids in ranked:
        for group in ("overall", CATEGORIES[question.category]):
            for k in KS:
                values[group][f"recall@{k}"].append(recall_at_k(ids, question.evidence, k))
                values[group][f"hit@{k}"].append(hit_at_k(ids, question.evidence, k))
    out: dict[str, dict[str, float]] = {}
    for group, figures in values.items():
        row: dict[str, float] = {"questions": float(len(figures[FIGURES[0]]))}
        for name in FIGURES:
            row[name], row[f"{name}_se"] = mean_and_error(figures[name])
        out[group] = row
    return out
