"""Choose the fusion depth and RRF constant on LoCoMo, together, and check they generalise.

Each question's text and vector channel lists are read once, deep
(:data:`DEEP`), through ``Store.recall`` in ``text`` and ``vector`` mode; every
``(depth, rrf_k)`` of the grid is then fused offline exactly as recall fuses
(:func:`embedmind.fusion.rrf` over each list's first ``depth`` items), so the
whole grid costs one pass over the questions. The grid's best point is
reported on the whole split, and leave-one-conversation-out: for each
conversation the point is chosen on the other four and scored on it, so the
figure is one measured on conversations the choice did not see.

Run: ``python -m embedmind_bench.locomo_tuning`` (about a minute, most of
it embedding the turns).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from embedmind.fusion import rrf
from embedmind.store import Store
from embedmind_bench.locomo_context import set_session_context
from embedmind_bench.locomo_data import Dataset, Question, data_path, load, score

DEEP = 200
DEPTHS = (10, 15, 20, 30, 40, 50, 75, 100)
RRF_KS = (1, 2, 3, 5, 10, 20, 30, 60)
Lists = list[tuple[list[str], list[str]]]
"""Per question: (text ids, vector ids), best first."""


def channel_lists(store: Store, questions: Sequence[Question]) -> Lists:
    """Each question's text and vector lists, :data:`DEEP` long, through the public API."""

    def ids(q: Question, mode: str) -> list[str]:
        return store.recall(q.text, k=DEEP, namespace=q.namespace, mode=mode).ids

    return [(ids(q, "text"), ids(q, "vector")) for q in questions]


def fused(lists: Lists, depth: int, rrf_k: int, k: int = 10) -> list[list[str]]:
    """The top ``k`` of RRF over each list's first ``depth`` items, per question."""
    out = []
    for text, vector in lists:
        pairs = [
            [(key, 1.0 / (i + 1)) for i, key in enumerate(part[:depth])] for part in (text, vector)
        ]
        out.append([key for key, _ in rrf(pairs, rrf_k)[:k]])
    return out


def grid(questions: Sequence[Question], lists: Lists) -> dict[tuple[int, int], dict[str, float]]:
    """Overall recall@10 and hit@10 for every ``(depth, rrf_k)``."""
    return {
        (depth, rrf_k): score(zip(questions, fused(lists, depth, rrf_k), strict=True))["overall"]
        for depth, rrf_k in itertools.product(DEPTHS, RRF_KS)
    }


def best(table: dict[tuple[int, int], dict[str, float]]) -> tuple[int, int]:
    """The point with the best recall@10 (hit@10 breaks ties)."""
    return max(table, key=lambda p: (round(table[p]["recall@10"], 6), table[p]["hit@10"]))


def leave_one_out(
    questions: Sequence[Question],
    lists: Lists,
    chooser: Callable[[dict[tuple[int, int], dict[str, float]]], tuple[int, int]] = best,
) -> tuple[dict[str, float], dict[str, tuple[int, int]]]:
    """Score each conversation with the point chosen on the others; return figures and picks."""
    namespaces = sorted({q.namespace for q in questions})
    picks: dict[str, tuple[int, int]] = {}
    ranked: list[tuple[Question, list[str]]] = []
    for held in namespaces:
        train = [i for i, q in enumerate(questions) if q.namespace != held]
        test = [i for i, q in enumerate(questions) if q.namespace == held]
        point = chooser(grid([questions[i] for i in train], [lists[i] for i in train]))
        picks[held] = point
        answers = fused([lists[i] for i in test], *point)
        ranked += zip([questions[i] for i in test], answers, strict=True)
    return score(ranked)["overall"], picks


def ingest(store: Store, data: Dataset, embedder: object) -> None:
    """Write every turn with its vector, in dialog order."""
    vectors = embedder.embed_documents([d.content for d in data.drafts])  # type: ignore[attr-defined]
    drafts = [dataclasses.replace(d, vector=v) for d, v in zip(data.drafts, vectors, strict=True)]
    store.remember_many(drafts, batch_size=512)


def _pair(row: dict[str, float]) -> str:
    return f"{row['recall@10']:.3f}/{row['hit@10']:.3f}"


def report(questions: Sequence[Question], lists: Lists) -> Iterable[str]:
    """Lines: the grid, the best point, today's point and the leave-one-out figure."""
    table = grid(questions, lists)
    yield "depth " + " ".join(f"{'rrf_k=' + str(r):>12}" for r in RRF_KS)
    for depth in DEPTHS:
        cells = (
            f"{table[depth, r]['recall@10']:.3f}/{table[depth, r]['hit@10']:.3f}" for r in RRF_KS
        )
        yield f"{depth:>5} " + " ".join(f"{c:>12}" for c in cells)
    point = best(table)
    yield f"best {point}: {table[point]['recall@10']:.3f} / {table[point]['hit@10']:.3f}"
    yield f"today (20, 60): {table[20, 60]['recall@10']:.3f} / {table[20, 60]['hit@10']:.3f}"
    overall, picks = leave_one_out(questions, lists)
    yield f"leave-one-conversation-out: {_pair(overall)} {picks}"


def main(argv: Sequence[str] = ()) -> None:
    """Ingest LoCoMo dev with the default model; print the grid without and with context."""
    from embedmind.embedders.minilm import MiniLMEmbedder

    data = load(data_path(argv[0] if argv else None))
    embedder = MiniLMEmbedder()
    with (
        tempfile.TemporaryDirectory(prefix="embedmind-tune-") as tmp,
        Store.open(Path(tmp) / "t.mind", embedder=embedder, synchronous="NORMAL") as store,
    ):
        ingest(store, data, embedder)
        runs = {}
        for on in (False, True):
            set_session_context(store, on)
            runs[on] = channel_lists(store, data.questions)
    for on, lists in runs.items():
        print(f"session context {'on' if on else 'off'}:")
        for line in report(data.questions, lists):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
