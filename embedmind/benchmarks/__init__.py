"""Benchmarks of embedmind against its peers (scripts, not timed tests).

Run them through ``scripts/``; this package holds the corpus generators,
the engine adapters, the runner and the report helpers.
"""

from embedmind.benchmarks.corpus import CorpusSpec, iter_documents, make_queries
from embedmind.benchmarks.lexical import EngineResult, SizeResult, run_size
from embedmind.benchmarks.report import format_table, results_json, write_json

__all__ = [
    "CorpusSpec",
    "EngineResult",
    "SizeResult",
    "format_table",
    "iter_documents",
    "make_queries",
    "results_json",
    "run_size",
    "write_json",
]
