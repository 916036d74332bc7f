#!/usr/bin/env python3
"""Lexical recall latency: embedmind against SQLite FTS5, tantivy and bm25s.

Builds every engine on the same synthetic chat corpus at each size, runs the
same questions on all of them round-robin, and prints p50/p95 latency, build
rate, and ratios against tantivy and FTS5 (the figures that matter on a
shared, noisy machine). Writes every figure and the machine description to
JSON with --out.

    python scripts/bench_lexical.py --sizes 100k,1m --queries 200 --out lexical.json
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from embedmind.benchmarks.corpus import CorpusSpec, iter_documents, make_queries
from embedmind.benchmarks.engines import DEFAULT_ENGINES, ENGINES
from embedmind.benchmarks.lexical import (
    Progress,
    ProgressFactory,
    SizeResult,
    remove_indexes,
    run_size,
)
from embedmind.benchmarks.report import (
    format_table,
    overlap,
    ratio,
    results_json,
    size_label,
    write_json,
)

TARGET = 3.0  # embedmind p50 / tantivy p50 at 1M, from issue 2


def parse_size(text: str) -> int:
    """Parse '100k', '1m', '250000' into a document count."""
    text = text.strip().lower().replace("_", "")
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if factor > 1 else text
    return int(float(number) * factor)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100k,1m", help="comma list, e.g. 10k,100k,1m")
    parser.add_argument("--queries", type=int, default=200, help="questions per size")
    parser.add_argument("--warmup", type=int, default=1, help="untimed passes before timing")
    parser.add_argument(
        "--engines",
        default=",".join(DEFAULT_ENGINES),
        help=f"comma list from {','.join(ENGINES)}",
    )
    parser.add_argument("--seed", type=int, default=CorpusSpec().seed)
    parser.add_argument("--out", type=Path, help="write all figures to this JSON file")
    parser.add_argument("--workdir", type=Path, help="index files go here (kept)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    args = parser.parse_args(argv)
    args.size_list = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    args.engine_list = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(args.engine_list) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {sorted(ENGINES)}")
    return args


def progress_factory(hidden: bool) -> ProgressFactory:
    def make(desc: str, total: int) -> Progress:
        bar: Progress = tqdm(total=total, desc=desc, unit="it", disable=hidden, leave=False)
        return bar

    return make


def print_summary(result: SizeResult) -> None:
    label = size_label(result.size)
    x = ratio(result, "embedmind", "tantivy")
    verdict = "-" if x is None else f"{x:.2f}"
    print(f"embedmind p50 / tantivy p50 at {label} = {verdict} (target <= {TARGET:g})")
    for base in [name for name in result.engines if name != "embedmind"]:
        value = overlap(result, "embedmind", base)
        shown = "-" if value is None else f"{value:.2f}"
        print(f"mean |top10(embedmind) ∩ top10({base})| / 10 at {label} = {shown}")


def run(args: argparse.Namespace, workdir: Path) -> list[SizeResult]:
    spec = CorpusSpec(seed=args.seed)
    queries = make_queries(args.queries, spec)
    progress = progress_factory(args.no_progress)
    results = []
    for size in args.size_list:
        label = size_label(size)
        start = time.perf_counter()
        docs = list(
            tqdm(
                iter_documents(size, spec),
                total=size,
                desc=f"corpus {label}",
                leave=False,
                disable=args.no_progress,
            )
        )
        print(
            f"\n== {label}: corpus of {size:,} docs generated in "
            f"{time.perf_counter() - start:.1f} s",
            flush=True,
        )
        size_dir = workdir / f"n{size}"
        result = run_size(
            docs, queries, args.engine_list, workdir=size_dir, warmup=args.warmup, progress=progress
        )
        del docs
        if args.workdir is None:
            remove_indexes(size_dir)
        results.append(result)
        print(format_table(result))
        print_summary(result)
        if args.out:  # rewrite after every size so a cut-short run keeps its figures
            write_json(args.out, results_json(results, config(args, spec)))
    return results


def config(args: argparse.Namespace, spec: CorpusSpec) -> dict[str, object]:
    return {
        "sizes": args.size_list,
        "queries": args.queries,
        "warmup": args.warmup,
        "engines": args.engine_list,
        "corpus": spec.__dict__,
        "k": 10,
        "timing": "time.perf_counter_ns per query, round-robin across engines",
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    own = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="embedmind-bench-")) if own else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        run(args, workdir)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"\ntotal {time.perf_counter() - started:.0f} s"
        + (f"; figures in {args.out}" if args.out else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
