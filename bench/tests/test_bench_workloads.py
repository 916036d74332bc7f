"""Every ``embedmind bench`` workload end to end at a tiny size (marked ``bench``).

Deselected by default (``-m 'not slow and not bench'``); run them with
``pytest -m bench tests/benchmarks``. Each goes through the CLI, exactly as
a user runs it, and checks the JSON document it writes. Peers missing from
the environment must show up as skipped, never as a failure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from embedmind.cli.main import main
from embedmind_bench import cli as bench
from embedmind_bench import locomo_data, report

pytestmark = [
    pytest.mark.bench,
    pytest.mark.timeout(900),
    # Peers warn about their own deprecations; that is not ours to fail on.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning"),
]


def run(tmp_path: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "figures.json"
    code = main(["bench", *argv, "--json", str(path), "--no-progress", "--workdir", str(tmp_path)])
    return code, json.loads(path.read_text())


def check(document: dict[str, Any], workload: str) -> None:
    assert report.missing_keys(document) == []
    assert document["workload"] == workload and document["status"] == "ok"
    assert document["figures"] and document["ratios"]
    assert document["command"].startswith(f"embedmind bench {workload}")
    assert document["blas"]["library"] and document["cores"] >= 1


@pytest.mark.parametrize(
    ("workload", "argv"),
    [
        ("lexical", ["--size", "500", "--queries", "5"]),
        ("vector", ["--size", "500", "--queries", "5"]),
        ("ingest", ["--sizes", "300,600", "--embed-sample", "20", "--embed-rounds", "2"]),
        ("ingest-compare", ["--sizes", "300", "--queries", "3"]),
        ("recall", ["--sizes", "300,600", "--queries", "5", "--warmup", "1"]),
        ("embedder", ["--texts", "16", "--queries", "5", "--reps", "1"]),
        ("fragments", ["--size", "100", "--per-record", "3", "--queries", "5"]),
        ("peers", ["--size", "300", "--queries", "5", "--no-locomo", "--embed-limit", "100"]),
    ],
)
def test_workload_writes_a_complete_report(tmp_path: Path, workload: str, argv: list[str]) -> None:
    code, document = run(tmp_path, workload, *argv)
    assert code == 0
    check(document, workload)
    if workload in FIRST_RECALL_READS:  # what the first recall after a load read from the disk
        sizes = document["figures"]["sizes"].values()
        assert all(FIRST_RECALL_READS[workload](size) >= 0 for size in sizes)


FIRST_RECALL_READS: dict[str, Callable[[dict[str, Any]], float]] = {
    "ingest": lambda size: size["vectors_given"]["index_catchup_read_kb"],
    "ingest-compare": lambda size: size["this.vectors"]["first_recall_read_kb"],
}


def test_the_vector_channel_is_timed_alone_beside_raw_usearch(tmp_path: Path) -> None:
    _, document = run(tmp_path, "vector", "--size", "500", "--queries", "5",
                      "--engines", "usearch,embedmind")  # fmt: skip
    channel = document["figures"]["500"]["channel"]
    whole = document["figures"]["500"]["engines"]["embedmind"]["p50_ms"]
    assert 0 < channel["channel_p50_ms"] < whole  # a phase of the recall, not all of it
    ratio = channel["channel_p50_ms"] / channel["usearch_p50_ms"]
    assert document["ratios"]["500.channel_p50.embedmind/usearch"] == pytest.approx(ratio)


def test_growth_ratios_between_sizes(tmp_path: Path) -> None:
    _, document = run(tmp_path, "recall", "--sizes", "300,600", "--queries", "5")
    assert set(document["figures"]["growth"]) == {"300->600"}
    assert "growth.300->600.p50.hybrid" in document["ratios"]


def test_missing_peers_are_skipped_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("chromadb", "lancedb"):
        monkeypatch.setitem(sys.modules, name, None)
    code, document = run(tmp_path, "peers", "--size", "300", "--queries", "5", "--no-locomo",
                         "--embed-limit", "100")  # fmt: skip
    assert code == 0
    check(document, "peers")
    engines = document["figures"]["300"]["engines"]
    assert engines["chroma"]["status"] == engines["lancedb"]["status"] == "skipped"
    assert engines["embedmind"]["status"] == "ok"
    assert {"chroma", "lancedb"} <= set(document["skipped"])


@pytest.mark.skipif(not locomo_data.data_path().exists(), reason="LoCoMo data not beside the repo")
def test_locomo_through_the_public_api(tmp_path: Path) -> None:
    code, document = run(tmp_path, "locomo", "--queries", "40")
    assert code == 0
    check(document, "locomo")
    methods = document["figures"]["methods"]
    assert {"text", "vector", "hybrid"} <= set(methods)
    for method in ("text", "vector", "hybrid"):
        overall = methods[method]["scores"]["overall"]
        assert overall["questions"] == 40
        assert 0.0 < overall["recall@10"] <= overall["hit@10"] <= 1.0


def test_every_workload_is_covered() -> None:
    assert set(bench.WORKLOADS) == {"locomo", "lexical", "vector", "ingest", "ingest-compare",
                                    "recall", "peers", "embedder", "fragments"}  # fmt: skip
