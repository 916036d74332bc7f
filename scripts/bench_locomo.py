"""LoCoMo retrieval quality: text-only, vector-only and hybrid, per category.

Usage: python scripts/bench_locomo.py [--data PATH] [--embedder default|fp32] [--out FILE]
Reads ../shared/data/locomo/locomo-dev.json (evaluation data, never shipped).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import embedmind
from embedmind.benchmarks import locomo

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo-dev.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--variant", default="int8", help="MiniLM variant: int8 or fp32")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    from embedmind.embedders.minilm import MiniLMEmbedder

    data = locomo.load(args.data)
    print(f"{len(data.drafts)} turns, {len(data.questions)} questions, {data.skipped} skipped")
    embedder = MiniLMEmbedder(variant=args.variant)
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        started = time.perf_counter()
        store.remember_many(data.drafts, batch_size=512)
        print(f"ingest: {len(data.drafts) / (time.perf_counter() - started):.0f} turns/s")
        results = {}
        for mode in ("text", "vector", "hybrid"):
            started = time.perf_counter()
            results[mode] = locomo.evaluate(store, data.questions, mode)
            per = (time.perf_counter() - started) / len(data.questions) * 1000
            print(f"{mode}: {per:.2f} ms/question")
    print(locomo.table(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
