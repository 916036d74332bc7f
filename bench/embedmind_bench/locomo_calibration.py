"""Whether LoCoMo scores mean what they say, and how recall spreads across conversations.

Calibration: every hit in a question's top 10 is one sample, its ``Hit.score``
against whether it is an evidence turn of that question. The scores fall in 10
equal-width bins over [0, 1]; a bin's *observed* figure is the fraction of its
hits that are evidence, and the expected calibration error (ECE) is the mean
``|mean score - observed fraction|`` over the bins, weighted by their hit
counts (Naeini et al. 2015). A calibrated score of 0.3 is right about 30% of
the time, and the ECE is small.

Folds: LoCoMo's conversations are the folds the scoring constants were chosen
over (leave one conversation out, ``docs/benchmarks.md``), so recall@10 and
hit@10 are also reported per conversation, with their minimum and maximum.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from embedmind_bench.locomo_data import Question, score
from embedmind_bench.report import Table, fmt

BINS = 10
TOP = 10
"""The hits per question that are scored (the top 10, as recall@10 counts)."""


def calibration(
    answers: Iterable[tuple[Question, Sequence[str], Sequence[float]]],
) -> dict[str, Any]:
    """The ECE and calibration table of the top-:data:`TOP` scores.

    Args:
        answers: ``(question, ids best first, their scores)`` per question.

    Returns:
        ``{"ece": float | None, "hits": n, "bins": [{"low", "high", "mean_score",
        "observed", "count"}, ...]}``, empty bins left out; ``ece`` is ``None``
        when there were no hits.
    """
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for question, ids, scores in answers:
        for memory_id, value in zip(ids[:TOP], scores[:TOP], strict=True):
            cell = sums[min(int(value * BINS), BINS - 1)]  # a score of 1 goes in the top bin
            cell[0] += value
            cell[1] += memory_id in question.evidence
            cell[2] += 1
    total = sum(count for _, _, count in sums.values())
    bins = [
        {
            "low": b / BINS,
            "high": (b + 1) / BINS,
            "mean_score": mean / count,
            "observed": hits / count,
            "count": int(count),
        }
        for b, (mean, hits, count) in sorted(sums.items())
    ]
    ece = (
        sum(abs(row["mean_score"] - row["observed"]) * row["count"] for row in bins) / total
        if total
        else None
    )
    return {"ece": ece, "hits": int(total), "bins": bins}


def folds(answers: Iterable[tuple[Question, Sequence[str]]]) -> dict[str, Any]:
    """Recall@10 and hit@10 per conversation, with the lowest and highest.

    Args:
        answers: ``(question, ids best first)`` per question.

    Returns:
        ``{"conversations": {namespace: {"questions", "recall@10", "hit@10"}},
        "min": {...}, "max": {...}}`` (``min``/``max`` per figure).
    """
    grouped: dict[str, list[tuple[Question, Sequence[str]]]] = defaultdict(list)
    for question, ids in answers:
        grouped[question.namespace].append((question, ids))
    per = {
        namespace.removeprefix("locomo/"): {
            "questions": overall["questions"],
            "recall@10": overall["recall@10"],
            "hit@10": overall["hit@10"],
        }
        for namespace, pairs in sorted(grouped.items())
        for overall in [score(pairs)["overall"]]
    }
    figures = ("recall@10", "hit@10")
    return {
        "conversations": per,
        "min": {f: min((row[f] for row in per.values()), default=None) for f in figures},
        "max": {f: max((row[f] for row in per.values()), default=None) for f in figures},
    }


def tables(figures: Mapping[str, Mapping[str, Any]], binned: Sequence[str]) -> list[Table]:
    """The calibration table and the per-conversation table.

    Args:
        figures: ``{method: {"folds": folds(...)}}``, with ``"calibration":
            calibration(...)`` for the methods that score their hits.
        binned: The methods whose score bins are printed (every calibrated
            method's ECE is, under the table).

    Returns:
        Two tables: score bins with each method's ECE, recall@10 per conversation.
    """
    calibrated = Table(
        f"LoCoMo calibration of the top-{TOP} scores: score bin -> observed fraction of "
        "evidence hits",
        ["method", "bin", "mean score", "observed", "hits"],
    )
    conversations = sorted({c for f in figures.values() for c in f["folds"]["conversations"]})
    spread = Table(
        "LoCoMo recall@10 per conversation (the folds the scoring constants were chosen over)",
        ["method", *conversations, "min", "max"],
    )
    for name, figure in figures.items():
        table = figure.get("calibration")
        for row in table["bins"] if table and name in binned else ():
            calibrated.add(
                name,
                f"{row['low']:.1f}-{row['high']:.1f}",
                fmt(row["mean_score"], ".3f"),
                fmt(row["observed"], ".3f"),
                str(row["count"]),
            )
        if table:
            calibrated.notes.append(
                f"{name}: ECE {fmt(table['ece'], '.3f')} over {table['hits']} hits"
            )
        per = figure["folds"]["conversations"]
        spread.add(
            name,
            *(fmt(per[c]["recall@10"], ".3f") if c in per else "-" for c in conversations),
            fmt(figure["folds"]["min"]["recall@10"], ".3f"),
            fmt(figure["folds"]["max"]["recall@10"], ".3f"),
        )
    return [calibrated, spread]
