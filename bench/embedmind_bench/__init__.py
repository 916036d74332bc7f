"""Benchmarks of embedmind beside its anchors and peers: ``embedmind bench WORKLOAD``.

One module per workload (``locomo``, ``lexical``, ``vector``, ``ingest``,
``recall``, ``peers``, ``embedder``, ``fragments``), each with an ``Options``
dataclass and a ``run(options, ...) -> Outcome``; the parts they share:
seeded corpora (``corpus``, ``vectordata``), engine adapters
(``*_engines``), round-robin timing (``timing``), figures (``metrics``) and
the JSON report with the machine description (``report``, ``machine``).
Peers are optional (the ``bench`` extra) and imported lazily (``optional``).
"""

from embedmind_bench.metrics import hit_at_k, percentile_ms, recall_at_k
from embedmind_bench.report import Outcome, Table
from embedmind_bench.sizes import parse_size, parse_sizes, size_label

__all__ = [
    "Outcome",
    "Table",
    "hit_at_k",
    "parse_size",
    "parse_sizes",
    "percentile_ms",
    "recall_at_k",
    "size_label",
]
