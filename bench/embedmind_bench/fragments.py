"""``embedmind bench fragments``: fragment queries with and without a per-record cap.

``size`` records, each with ``per_record`` fragments of embedding-like
vectors (clustered around seeded centres), then the same queries uncapped
and with ``max_per_record=2``, round-robin (target: capped p50 within 2x
uncapped). The records are written text-only with a hashing embedder, so
only the fragment index is measured.

Expected duration on 2 cores: 10k records x 10 fragments in 1-3 minutes.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedmind.embedders.hashing import HashingEmbedder
from embedmind.model import Draft
from embedmind.store import Store
from embedmind_bench import metrics
from embedmind_bench.progress import ProgressFactory, silent
from embedmind_bench.report import Outcome, Table, fmt
from embedmind_bench.sizes import size_label
from embedmind_bench.timing import round_robin
from embedmind_bench.vectordata import Matrix

CAP = 2


@dataclass
class Options:
    """How to run the fragments benchmark.

    Attributes:
        sizes: Record counts, in run order.
        per_record: Fragments per record.
        queries: Queries per size.
        dims: Vector dimensions.
        seed: Seed of the vectors.
        workdir: Where stores go (a temporary directory when ``None``).
    """

    sizes: list[int] = field(default_factory=lambda: [10_000])
    per_record: int = 10
    queries: int = 200
    dims: int = 384
    seed: int = 3
    workdir: Path | None = None


def _size(
    records: int, options: Options, workdir: Path, progress: ProgressFactory
) -> dict[str, Any]:
    """Write ``records`` records with their fragments and time both query kinds."""
    rng = np.random.default_rng([options.seed, records])
    centres = rng.normal(size=(512, options.dims))

    def vectors(n: int) -> Matrix:
        mix = centres[rng.integers(0, len(centres), n)] + 0.3 * rng.normal(size=(n, options.dims))
        unit: Matrix = (mix / np.linalg.norm(mix, axis=1, keepdims=True)).astype(np.float32)
        return unit

    path = workdir / f"fragments-{records}.mind"
    store = Store.open(path, embedder=HashingEmbedder(options.dims), synchronous="NORMAL")
    try:
        store.remember_many(
            [Draft(f"document {i}", id=f"d{i}") for i in range(records)], batch_size=10_000
        )
        bar = progress(f"fragments {size_label(records)}", records)
        started = time.perf_counter()
        for i in range(records):
            block = vectors(options.per_record)
            store.fragments.put(
                f"d{i}", [((j * 100, j * 100 + 100), block[j]) for j in range(options.per_record)]
            )
            bar.update(1)
        put_s = time.perf_counter() - started
        bar.close()
        queries = vectors(options.queries)
        store.fragments.query(queries[0].tolist(), k=10)  # builds or loads the index
        runs = round_robin(
            {
                "uncapped": lambda i: store.fragments.query(queries[i].tolist(), k=10),
                f"max_per_record={CAP}": lambda i: store.fragments.query(
                    queries[i].tolist(), k=10, max_per_record=CAP
                ),
            },
            len(queries),
            warmup=5,
        )
    finally:
        store.close()
    total = records * options.per_record
    figures: dict[str, Any] = {
        "records": records,
        "fragments": total,
        "put_fragments_per_s": total / put_s,
    }
    for name, found in runs.items():
        figures[name] = {"error": found.error} if found.error else metrics.latency(found.seconds)
    return figures


def run(options: Options, *, progress: ProgressFactory = silent) -> Outcome:
    """Time capped and uncapped fragment queries at every size.

    Args:
        options: Sizes, fragments per record, queries.
        progress: Progress bar factory.

    Returns:
        Figures per size, the capped/uncapped p50 ratio, a table.
    """
    outcome = Outcome()
    table = Table(
        f"fragments, {options.per_record} per record, {options.dims} dims, top-10",
        [
            "records",
            "fragments",
            "put frag/s",
            "uncapped p50/p95 ms",
            f"cap {CAP} p50/p95 ms",
            "capped/uncapped p50",
        ],
    )
    with tempfile.TemporaryDirectory(prefix="embedmind-bench-", dir=options.workdir) as tmp:
        for records in options.sizes:
            label = size_label(records)
            f = _size(records, options, Path(tmp), progress)
            outcome.figures[label] = f
            plain, capped = f["uncapped"], f[f"max_per_record={CAP}"]
            x = metrics.ratio(capped.get("p50_ms"), plain.get("p50_ms"))
            outcome.ratios[f"{label}.p50.capped/uncapped"] = x
            table.add(
                label,
                f"{f['fragments']:,}",
                fmt(f["put_fragments_per_s"], ",.0f"),
                f"{fmt(plain.get('p50_ms'), '.2f')} / {fmt(plain.get('p95_ms'), '.2f')}",
                f"{fmt(capped.get('p50_ms'), '.2f')} / {fmt(capped.get('p95_ms'), '.2f')}",
                fmt(x, ".2f"),
            )
    table.notes.append("target: capped/uncapped p50 <= 2")
    outcome.tables.append(table)
    return outcome
