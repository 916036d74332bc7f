"""Measure the episodic seed's query side on LoCoMo: candidate widening and latest value.

One store holds the development split with session context on (a new store's
default). Each question's vector is computed once and passed to
``Store.recall(vector=...)``, so every setting below is asked through the
public API at the cost of the lexical work alone. Settings:

- ``base`` — hybrid as it is (the default path);
- ``widen s×n`` — ``widen=True`` with ``s`` key-term sub-queries of ``n``
  candidates each (:mod:`embedmind.lexical.widening`'s constants);
- ``latest span/band`` — ``latest=True`` with the cluster drawn from the first
  ``span`` hits within ``band`` of the best (:mod:`embedmind.latest_value`).

For each setting: recall@10 and hit@10 overall and per category, each with
its standard error (over questions), and the paired difference to ``base``
with the standard error of that difference. Then leave-one-conversation-out:
for each conversation, the best setting of each family (by recall@10 on the
other four) is scored on it, so the figure is one measured on conversations
the choice did not see.

Run: ``python -m embedmind_bench.locomo_query_side`` (a few minutes on 2
cores, most of it embedding the turns).
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embedmind import latest_value
from embedmind.lexical import widening
from embedmind.store import Store
from embedmind_bench.locomo_data import CATEGORIES, Question, data_path, load
from embedmind_bench.locomo_tuning import ingest
from embedmind_bench.metrics import hit_at_k, mean_and_error, recall_at_k

WIDEN_GRID = ((1, 10), (2, 5), (2, 10), (2, 20), (3, 10))
LATEST_GRID = ((3, 0.5), (5, 0.5), (5, 0.7), (10, 0.5))
Setting = tuple[str, dict[str, Any], dict[str, Any]]
"""(name, recall options, module constants to set)."""


def settings() -> list[Setting]:
    """Every setting measured, ``base`` first."""
    out: list[Setting] = [("base", {}, {})]
    out += [
        (f"widen {s}x{n}", {"widen": True}, {"SUB_QUERIES": s, "PER_SUB_QUERY": n})
        for s, n in WIDEN_GRID
    ]
    out += [
        (f"latest {span}/{band}", {"latest": True}, {"SPAN": span, "BAND": band})
        for span, band in LATEST_GRID
    ]
    return out


@contextlib.contextmanager
def constants(values: dict[str, Any]) -> Iterator[None]:
    """Set the widening or latest-value module constants for one setting."""
    saved: list[tuple[Any, str, Any]] = []
    for name, value in values.items():
        module = widening if hasattr(widening, name) else latest_value
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def per_question(ids: Sequence[str], question: Question) -> tuple[float, float]:
    """``(recall@10, hit@10)`` of one question."""
    return recall_at_k(ids, question.evidence, 10), hit_at_k(ids, question.evidence, 10)


def answers(
    store: Store, questions: Sequence[Question], vectors: Sequence[Any], **options: Any
) -> tuple[np.ndarray, float, list[list[str]]]:
    """Per-question ``(recall@10, hit@10)`` rows, the p50 recall latency (ms) and the ids."""
    rows, seconds, ids = [], [], []
    for question, vector in zip(questions, vectors, strict=True):
        started = time.perf_counter()
        found = store.recall(
            question.text, k=10, namespace=question.namespace, vector=vector, **options
        )
        seconds.append(time.perf_counter() - started)
        rows.append(per_question(found.ids, question))
        ids.append(found.ids)
    return np.asarray(rows), float(np.median(seconds) * 1000), ids


def ask(
    store: Store, questions: Sequence[Question], vectors: Sequence[Any], setting: Setting
) -> tuple[np.ndarray, float]:
    """Per-question ``(recall@10, hit@10)`` rows and the p50 recall latency (ms) of a setting."""
    _, options, values = setting
    with constants(values):
        rows, p50, _ = answers(store, questions, vectors, **options)
    return rows, p50


def groups(questions: Sequence[Question]) -> dict[str, np.ndarray]:
    """Question positions of ``overall`` and of each category."""
    out = {"overall": np.arange(len(questions))}
    for number, name in CATEGORIES.items():
        out[name] = np.asarray([i for i, q in enumerate(questions) if q.category == number])
    return out


def table(questions: Sequence[Question], runs: dict[str, tuple[np.ndarray, float]]) -> list[str]:
    """Lines: each setting per group, recall@10 ± se, hit@10 ± se, Δrecall@10 ± paired se."""
    base = runs["base"][0]
    lines = [f"{'setting':<16} {'group':<12} {'n':>4} {'recall@10':>15} {'hit@10':>15} "
             f"{'Δrecall@10':>17} {'p50 ms':>7}"]  # fmt: skip
    for name, (rows, p50) in runs.items():
        for group, at in groups(questions).items():
            if not len(at):
                continue
            r, r_se = mean_and_error(rows[at, 0])
            h, h_se = mean_and_error(rows[at, 1])
            d, d_se = mean_and_error(rows[at, 0] - base[at, 0])
            lines.append(
                f"{name:<16} {group:<12} {len(at):>4} {r:>7.3f} ± {r_se:.3f} {h:>7.3f} ± {h_se:.3f}"
                f" {d:>+8.3f} ± {d_se:.3f} {p50 if group == 'overall' else math.nan:>7.2f}"
            )
    return lines


def leave_one_out(
    questions: Sequence[Question], runs: dict[str, tuple[np.ndarray, float]], prefix: str
) -> tuple[float, float, dict[str, str]]:
    """Recall@10 and hit@10 with each conversation scored by the setting chosen on the others.

    The choice is among ``base`` and the settings whose name starts with
    ``prefix`` (so "off" is always a candidate).
    """
    names = ["base", *(n for n in runs if n.startswith(prefix))]
    namespaces = np.asarray([q.namespace for q in questions])
    total = np.zeros(2)
    picks = {}
    for held in sorted(set(namespaces.tolist())):
        train, test = namespaces != held, namespaces == held
        pick = max(names, key=lambda n: (round(runs[n][0][train, 0].mean(), 9), -names.index(n)))
        picks[held] = pick
        total += runs[pick][0][test].sum(axis=0)
    return float(total[0] / len(questions)), float(total[1] / len(questions)), picks


def main(argv: Sequence[str] = ()) -> None:
    """Ingest the development split, ask every setting, print the table and the LOO figures."""
    from embedmind.embedders.minilm import MiniLMEmbedder

    data = load(data_path(argv[0] if argv else None))
    embedder = MiniLMEmbedder()
    questions = data.questions
    with (
        tempfile.TemporaryDirectory(prefix="embedmind-query-side-") as tmp,
        Store.open(
            Path(tmp) / "q.mind", embedder=embedder, synchronous="NORMAL", session_context=True
        ) as store,
    ):
        ingest(store, data, embedder)
        vectors = [embedder.embed_query(q.text) for q in questions]
        runs = {s[0]: ask(store, questions, vectors, s) for s in settings()}
        # Base again, last: its p50 beside the others' in the same run.
        again = ask(store, questions, vectors, settings()[0])
        runs["base"] = (runs["base"][0], min(runs["base"][1], again[1]))
    current = sum(latest_value.asks_current(q.text) for q in questions)
    print(f"LoCoMo dev: {len(questions)} questions, {current} ask for a current value")
    for line in table(questions, runs):
        print(line)
    for prefix in ("widen", "latest"):
        r, h, picks = leave_one_out(questions, runs, prefix)
        print(f"leave-one-conversation-out, {prefix}: recall@10 {r:.3f} hit@10 {h:.3f} {picks}")


if __name__ == "__main__":
    main(sys.argv[1:])
