"""The pure parts of ``embedmind bench``: fast, in the default run.

Sizes, percentiles against numpy, recall@k/hit@k against hand oracles, the
JSON report's schema, seeded vectors, round-robin timing, the skipped-peer
path, and the CLI's parsing. The workloads themselves run at tiny sizes in
``test_bench_workloads.py`` (marked ``bench``).
"""

from __future__ import annotations

import doctest
import importlib
import json
import mmap
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from embedmind.cli.main import EXIT_INVALID, build_parser, main
from embedmind_bench import cli as bench
from embedmind_bench import folders, machine, metrics, optional, report, timing, vectordata
from embedmind_bench.locomo_data import Question, score
from embedmind_bench.progress import silent
from embedmind_bench.sizes import parse_size, parse_sizes, size_label

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "size"),
    [("10k", 10_000), ("100K", 100_000), ("1M", 1_000_000), ("1m", 1_000_000),
     ("10000", 10_000), ("10_000", 10_000), ("1.5k", 1_500), (" 2k ", 2_000)],
)  # fmt: skip
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "k", "ten", "-5", "0", "1.5", "1.0001k"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_parse_sizes_and_labels() -> None:
    assert parse_sizes("10k,100k,1M,10k") == [10_000, 100_000, 1_000_000]
    assert [size_label(s) for s in (500, 10_000, 1_500, 1_000_000, 2_500_000)] == [
        "500", "10k", "1500", "1M", "2500k",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="no sizes"):
        parse_sizes(" , ")


def test_percentiles_match_numpy() -> None:
    seconds = np.random.default_rng(5).exponential(0.002, 501).tolist()
    for q in (50, 95, 99):
        assert metrics.percentile_ms(seconds, q) == pytest.approx(np.percentile(seconds, q) * 1e3)
    summary = metrics.latency(seconds)
    assert summary["samples"] == 501
    assert summary["p50_ms"] == pytest.approx(np.median(seconds) * 1e3)
    assert metrics.percentile_ms([], 50) is None
    assert metrics.latency([])["p95_ms"] is None


def test_percentile_of_a_hand_sample() -> None:
    # numpy's default: linear interpolation between the closest ranks.
    assert metrics.percentile_ms([0.001, 0.002, 0.003, 0.004], 50) == pytest.approx(2.5)
    assert metrics.percentile_ms([0.001, 0.002, 0.003, 0.004, 0.005], 95) == pytest.approx(4.8)


def test_recall_and_hit_at_k_against_a_hand_oracle() -> None:
    found = ["x", "a", "y", "b", "z"]
    assert metrics.recall_at_k(found, {"a", "b"}, 1) == 0.0
    assert metrics.recall_at_k(found, {"a", "b"}, 2) == 0.5
    assert metrics.recall_at_k(found, {"a", "b"}, 4) == 1.0
    assert metrics.recall_at_k(found, {"a", "b", "q"}, 10) == pytest.approx(2 / 3)
    assert metrics.hit_at_k(found, {"b"}, 3) == 0.0
    assert metrics.hit_at_k(found, {"b"}, 4) == 1.0
    assert metrics.hit_at_k([], {"b"}, 4) == 0.0
    with pytest.raises(ValueError, match="relevant"):
        metrics.recall_at_k(found, set(), 5)


def test_locomo_score_per_category_against_a_hand_oracle() -> None:
    q1 = Question("ns", "who?", 1, frozenset({"a", "b"}))
    q2 = Question("ns", "when?", 2, frozenset({"c"}))
    ranked = [(q1, ["a"] + ["n"] * 5 + ["b"]), (q2, ["n"] * 10 + ["c"])]
    scores = score(ranked)
    assert scores["overall"]["questions"] == 2
    assert scores["overall"]["recall@5"] == pytest.approx((0.5 + 0.0) / 2)
    assert scores["overall"]["recall@10"] == pytest.approx((1.0 + 0.0) / 2)
    assert scores["overall"]["hit@5"] == pytest.approx(0.5)
    assert scores["multi-hop"] == {"questions": 1, "recall@5": 0.5, "recall@10": 1.0,
                                   "hit@5": 1.0, "hit@10": 1.0}  # fmt: skip
    assert scores["temporal"]["hit@10"] == 0.0


def test_ratio_and_growth() -> None:
    assert metrics.ratio(3.0, 1.5) == 2.0
    assert metrics.ratio(None, 1.0) is None
    assert metrics.ratio(1.0, 0.0) is None
    assert metrics.ratio(float("nan"), 1.0) is None
    linear = metrics.growth((10_000, 1.0), (100_000, 10.0))
    assert linear["ratio"] == 10.0 and linear["exponent"] == pytest.approx(1.0)
    assert metrics.growth((10_000, 2.0), (1_000_000, 2.0))["exponent"] == pytest.approx(0.0)
    assert metrics.growth((10_000, None), (100_000, 1.0))["exponent"] is None


def _outcome() -> report.Outcome:
    table = report.Table("t", ["engine", "p50 ms"])
    table.add("numpy", "1.00")
    return report.Outcome(
        figures={"10k": {"p50_ms": float("nan"), "n": np.int64(3), "x": np.float32(0.5)}},
        ratios={"10k.p50.a/b": 1.5, "10k.p50.a/c": None},
        tables=[table],
        skipped={"faiss": "faiss not installed"},
        packages=("faiss-cpu",),
    )


def test_the_machine_line_names_the_vector_extensions_and_usearchs_kernel() -> None:
    cpuinfo = (
        "processor\t: 0\nmodel name\t: AMD EPYC\n"
        "flags\t\t: fpu sse4_2 avx512_bf16 avx f16c avx2 avx512f avx512bw\n\n"
        "processor\t: 1\nflags\t\t: fpu avx2 avx512f avx512_vnni avx512_fp16\n"
    )
    assert machine.simd(cpuinfo) == ["avx2", "avx512f", "avx512_bf16"]  # the first CPU, in order
    assert machine.simd("processor\t: 0\n") == []
    info = {"cpu_model": "AMD EPYC", "simd": ["avx2"], "graph_kernel": "haswell",
            "cores": {"logical": 2}, "ram_bytes": 2**34, "python": "3.11.7",
            "load_average": [1.0, 1.0, 1.0]}  # fmt: skip
    line = machine.summary(info, {"library": "openblas", "version": "0.3", "threads": 2})
    assert line.startswith("AMD EPYC (avx2), 2 cores") and "usearch kernel haswell" in line
    assert machine.summary(info | {"simd": []}, {}).startswith("AMD EPYC, 2 cores")


def _read_from_the_disk(path: Path) -> bytes:
    """Read ``path`` with ``O_DIRECT``, which bypasses the page cache: every byte is a disk read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:
        pytest.skip(f"the filesystem of {path.parent} refuses O_DIRECT: {e}")
    size = path.stat().st_size
    buffer = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs
    try:
        assert os.readv(fd, [buffer]) == size
    finally:
        os.close(fd)
    return bytes(buffer)


def test_disk_reads_count_what_the_page_cache_did_not_serve(tmp_path: Path) -> None:
    path = tmp_path / "blocks.bin"
    path.write_bytes(os.urandom(1 << 20))
    before = machine.disk_read_kb()
    read = _read_from_the_disk(path)
    assert machine.disk_read_kb() - before >= 1024
    cached = machine.disk_read_kb()
    assert path.read_bytes() == read  # through the page cache now: no new reads
    assert machine.disk_read_kb() - cached < 1024


def test_the_lexical_runner_counts_each_engines_disk_reads_apart(tmp_path: Path) -> None:
    from embedmind_bench import lexical, lexical_runner

    path = tmp_path / "postings.bin"
    path.write_bytes(os.urandom(256 << 10))

    class Engine:
        def __init__(self, reads: bool) -> None:
            self.reads = reads

        def search(self, query: str, k: int) -> list[int]:
            if self.reads:
                _read_from_the_disk(path)
            return [1]

    engines = {"cold": Engine(reads=True), "warm": Engine(reads=False)}
    results = {name: lexical_runner.EngineResult(name) for name in engines}
    bar = silent("timed", 3)
    lexical_runner._timed_rounds(engines, results, ["a", "b", "c"], record=False, bar=bar)
    assert results["cold"].disk_read_kb == 0  # a warm-up pass is not counted
    lexical_runner._timed_rounds(engines, results, ["a", "b", "c"], record=True, bar=bar)
    assert results["cold"].disk_read_kb >= 3 * 256
    assert results["warm"].disk_read_kb < 256  # the other engine's reads are not its own
    size = lexical_runner.SizeResult(size=10, queries=3, engines=results)
    assert lexical._engine_figures(size, results["cold"])["disk_read_kb_per_query"] >= 256


def test_report_has_every_required_key_and_is_strict_json(tmp_path: Path) -> None:
    started = report._dt.datetime.now(report._dt.timezone.utc)
    document = report.build("vector", _outcome(), config={"sizes": [10_000]},
                            command="embedmind bench vector", argv=["embedmind"], started=started)  # fmt: skip
    assert report.missing_keys(document) == []
    assert document["schema"] == report.SCHEMA
    assert isinstance(document["cores"], int) and document["cores"] >= 1
    assert {"embedmind", "numpy", "usearch", "onnxruntime", "apsw", "sqlite", "faiss-cpu"} <= set(
        document["versions"]
    )
    assert {"library", "version", "kernel", "threads", "source"} <= set(document["blas"])
    assert {"platform", "cpu_model", "simd", "graph_kernel", "cores", "ram_bytes", "python"} <= set(
        document["machine"]
    )
    assert document["machine"]["graph_kernel"]  # usearch is installed here: it names a kernel
    path = tmp_path / "deep" / "run.json"
    report.write(path, document)
    parsed = json.loads(path.read_text())  # NaN would not parse strictly: it became null
    assert parsed["figures"]["10k"] == {"p50_ms": None, "n": 3, "x": 0.5}
    assert parsed["ratios"] == {"10k.p50.a/b": 1.5, "10k.p50.a/c": None}
    assert report.missing_keys({"schema": 1}) == list(report.REQUIRED_KEYS[1:])


def test_default_json_path() -> None:
    when = report._dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=report._dt.timezone.utc)
    path = report.default_path("peers", "10k", when, Path("/r"))
    assert path == Path("/r/build/bench/peers-10k-20260102T030405Z.json")


def test_table_renders_skipped_rows() -> None:
    table = report.Table("title", ["engine", "p50 ms", "recall"])
    table.add("usearch", report.fmt(0.1234, ".2f"), report.fmt(None, ".3f"))
    table.skip("faiss", "faiss not installed")
    table.skip("chroma", "boom", status="failed")
    assert table.render().splitlines() == [
        "title", "engine  | p50 ms | recall", "usearch |   0.12 |      -",
        "faiss   | skipped: faiss not installed", "chroma  | failed: boom",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="cells"):
        table.add("too", "few")


def test_mixed_vectors_are_seeded_prefix_stable_unit_vectors() -> None:
    base = vectordata.mix(np.eye(8, dtype=np.float32), 50, np.random.default_rng(1))
    big = vectordata.mixed_vectors(base, 25_000, seed=7)
    assert big.shape == (25_000, 8) and big.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(big, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vectordata.mixed_vectors(base, 12_345, seed=7), big[:12_345])
    np.testing.assert_array_equal(
        vectordata.mixed_vectors(base, 25_000, seed=7, start=9_999), big[9_999:]
    )
    assert not np.array_equal(vectordata.mixed_vectors(base, 100, seed=8), big[:100])
    real = base[:3]
    both = vectordata.corpus_vectors(real, base, 10, seed=7)
    np.testing.assert_array_equal(both[:3], real)
    np.testing.assert_array_equal(both[3:], big[3:10])


def test_exact_top_k_matches_a_full_sort() -> None:
    rng = np.random.default_rng(2)
    vectors = vectordata.mix(rng.normal(size=(30, 16)).astype(np.float32), 500, rng)
    queries = vectors[:70] + 0.01
    truth = vectordata.exact_top_k(vectors, queries, 10)
    expected = [np.argsort(-(vectors @ q), kind="stable")[:10].tolist() for q in queries]
    assert [set(t) for t in truth] == [set(e) for e in expected]
    assert [t[0] for t in truth] == [e[0] for e in expected]


def test_round_robin_times_every_engine_and_survives_a_failure() -> None:
    calls: list[str] = []

    def ok(i: int) -> list[int]:
        calls.append("ok")
        return [i]

    def broken(i: int) -> list[int]:
        calls.append("broken")
        if i == 2:
            raise RuntimeError("boom")
        return []

    runs = timing.round_robin({"ok": ok, "broken": broken}, 4, warmup=1)
    assert runs["ok"].results == [[0], [1], [2], [3]] and len(runs["ok"].seconds) == 4
    assert runs["broken"].error == "RuntimeError: boom" and len(runs["broken"].seconds) == 2
    assert calls[:4] == ["ok", "broken", "ok", "broken"]  # warm-up, then query 0
    assert calls[4:6] == ["broken", "ok"]  # query 1: the order rotates


def test_a_missing_peer_is_a_reason_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss now raises ImportError
    module, reason = optional.load("faiss")
    assert module is None
    assert reason == 'faiss not installed (pip install "embedmind-bench[peers]")'
    assert optional.load("json") == (json, "")


def test_a_missing_vector_peer_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from embedmind_bench import vector

    monkeypatch.setitem(sys.modules, "hnswlib", None)
    vectors = np.eye(4, dtype=np.float32)
    engine, figures = vector._build("hnswlib", vectors, ["a"] * 4, tmp_path, 64, {})
    assert engine is None
    assert figures == {
        "status": "skipped",
        "reason": 'hnswlib not installed (pip install "embedmind-bench[peers]")',
    }


def test_a_missing_store_peer_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from embedmind_bench import peers

    monkeypatch.setitem(sys.modules, "chromadb", None)
    corpus = peers.Corpus(
        ["a"], ["text"], np.ones((1, 4), np.float32), ["default"], [], np.ones((0, 4)), []
    )
    engine, figures = peers._build("chroma", corpus, tmp_path / "chroma", {})
    assert engine is None and figures["status"] == "skipped"
    assert "chromadb not installed" in figures["reason"]
    assert not (tmp_path / "chroma").exists()


def test_reading_a_folders_files_reads_every_byte_below_it(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "graph").write_bytes(b"g" * 5)
    (tmp_path / "store").write_bytes(b"s" * ((1 << 24) + 1))  # more than one buffer
    assert folders.read_files(tmp_path) == folders.disk_bytes(tmp_path) == 5 + (1 << 24) + 1
    assert folders.read_files(tmp_path / "absent") == 0  # an engine that keeps no files


def test_the_vector_workload_reads_each_engines_files_before_the_first_timed_query(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The engines are built in turn: without the read, the store answers from
    # pages the OS may have dropped while the raw graphs were built after it.
    from embedmind.embedders.hashing import HashingEmbedder
    from embedmind_bench import vector

    read: dict[str, int] = {}
    read_when_asked: list[dict[str, int]] = []
    real_read, real_round_robin = vector.read_files, vector.round_robin

    def reading(root: Path) -> int:
        read[root.name] = real_read(root)
        return read[root.name]

    def asking(*args: object, **kwargs: object) -> object:
        read_when_asked.append(dict(read))
        return real_round_robin(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vector, "read_files", reading)
    monkeypatch.setattr(vector, "round_robin", asking)
    embedder = HashingEmbedder(16)
    base = vectordata.base_vectors(embedder, vector.CorpusSpec(), count=20)
    queries = vectordata.query_vectors(embedder, ["what did she say", "where is it"])
    options = vector.Options(engines=("embedmind", "numpy"), queries=2, warmup=0)
    context = {"embedder": embedder, "progress": silent, "workdir": tmp_path}
    vector._size(options, 300, base, queries, context)
    first = read_when_asked[0]
    assert set(first) == {"embedmind", "numpy"}
    assert first["embedmind"] > 0  # the store's own files, read through


def test_cli_parses_sizes_and_builds_options() -> None:
    args = build_parser().parse_args(["bench", "vector", "--size", "1M", "--queries", "20"])
    opts = bench.options(args)
    assert opts.sizes == [1_000_000] and opts.queries == 20
    args = build_parser().parse_args(["bench", "ingest", "--sizes", "10k,100k,1M"])
    assert bench.options(args).sizes == [10_000, 100_000, 1_000_000]
    args = build_parser().parse_args(["bench", "locomo", "--queries", "50", "--no-anchors"])
    opts = bench.options(args)
    assert opts.questions == 50 and opts.anchors is False


@pytest.mark.parametrize("workload", list(bench.WORKLOADS))
def test_cli_command_reproduces_the_options(workload: str) -> None:
    args = build_parser().parse_args(["bench", workload])
    opts = bench.options(args)
    line = bench.command(args, opts)
    assert line.startswith(f"embedmind bench {workload}")
    again = build_parser().parse_args(line.split()[1:])
    assert bench.options(again) == opts


def test_cli_rejects_bad_sizes_and_engines(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["bench", "vector", "--size", "lots"])
    assert exc.value.code == 2
    assert main(["bench", "vector", "--engines", "numpy,annoy"]) == EXIT_INVALID
    assert "unknown annoy" in capsys.readouterr().err


def test_locomo_without_data_exits_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "locomo.json"
    code = main(["bench", "locomo", "--data", str(tmp_path / "missing.json"), "--json", str(out)])
    assert code == bench.EXIT_SKIPPED
    assert "LoCoMo data not found" in capsys.readouterr().out
    document = json.loads(out.read_text())
    assert document["status"] == "skipped" and report.missing_keys(document) == []
    assert "locomo" in document["skipped"]


def test_cli_reference_lists_every_workload() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for workload in bench.WORKLOADS:
        assert f"embedmind bench {workload}" in page, workload


FAST_DOCTESTS = ["sizes", "metrics", "report", "optional", "vectordata", "timing", "progress",
                 "corpus", "lexical_engines", "lexical_runner"]  # fmt: skip


@pytest.mark.parametrize("name", FAST_DOCTESTS)
def test_module_examples_run(name: str) -> None:
    module = importlib.import_module(f"embedmind_bench.{name}")
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0 and attempted > 0


@pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="the peak reset is Linux's /proc"
)
def test_a_peak_watch_sees_only_its_own_stretch() -> None:
    """The peak counts memory touched after the watch began, and a new watch forgets it."""
    from embedmind_bench.resident import PeakWatch

    first = PeakWatch()
    block = np.ones(200 * 2**20 // 8)  # 200 MB, every page touched
    del block
    seen = first.figures()
    assert seen["peak_rss_growth_mb"] is not None
    assert seen["peak_rss_growth_mb"] >= 180
    # Freed before this watch began: a watch that did not reset would report it.
    later = PeakWatch().figures()
    assert later["peak_rss_growth_mb"] is not None
    assert later["peak_rss_growth_mb"] < 50


class _Clock:
    """A ``time`` stand-in whose clock moves only when a fake says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_store_over_raw_is_the_median_of_alternated_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from embedmind_bench import ingest, scaling
    from embedmind_bench.corpus import CorpusSpec

    clock = _Clock()
    monkeypatch.setattr(ingest, "time", clock)
    calls: list[tuple[str, tuple[str, ...]]] = []
    store_seconds = iter([2.0, 1.0, 4.0])

    class Embedder:
        def embed_documents(self, texts: list[str]) -> None:
            calls.append(("raw", tuple(texts)))
            clock.now += 1.0

    class Store:
        def remember_many(self, texts: list[str], batch_size: int) -> None:
            calls.append(("store", tuple(texts)))
            clock.now += next(store_seconds)

    spec = CorpusSpec()
    inputs = scaling.Shared(Embedder(), spec, np.zeros((1, 4)), [], np.zeros((1, 4)))  # type: ignore[arg-type]
    options = scaling.Options(embed_sample=5, embed_rounds=3)
    figures = ingest._with_embedding(Store(), 10, options, inputs)  # type: ignore[arg-type]

    timed = calls[1:]  # the first call only warms the embedder's threads
    assert [side for side, _ in timed] == ["raw", "store", "store", "raw", "raw", "store"]
    rounds = [timed[i : i + 2] for i in range(0, 6, 2)]
    assert all(a[1] == b[1] and len(a[1]) == 5 for a, b in rounds)  # same texts within a round
    assert len({a[1] for a, _ in rounds}) == 3  # new texts every round
    assert set(rounds[0][0][1]).isdisjoint(ingest.iter_documents(10, spec))  # beyond the store's
    assert figures["store/raw_per_round"] == [0.5, 1.0, 0.25]
    assert figures["store/raw"] == 0.5
    assert figures["store_texts_per_s"] == 5 / 2.0 and figures["raw_embedder_texts_per_s"] == 5.0


def test_ingest_compare_rejects_a_baseline_that_is_no_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "ingest-compare", "--baseline", str(tmp_path), "--json",
                 str(tmp_path / "out.json")])  # fmt: skip
    assert code == EXIT_INVALID
    assert "holds no embedmind package" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_ingest_compare_ratios_name_each_side() -> None:
    from embedmind_bench import ingest_compare

    def child(end_to_end: float, ingest: float) -> dict[str, float]:
        return {"end_to_end_s": end_to_end, "ingest_s": ingest, "first_recall_s": 0.006,
                "warm_p50_s": 0.002, "disk_mb": 1.0, "peak_rss_mb": 2.0,
                "first_recall_read_kb": 152.0}  # fmt: skip

    row = {"this.vectors": child(30.0, 29.0), "this.text": child(4.0, 4.0),
           "this.default": child(6.0, 6.0),
           "baseline.vectors": child(45.0, 44.0), "baseline.text": child(5.0, 5.0),
           "baseline.default": child(17.5, 17.5),
           "raw_usearch_s": 20.0, "raw_usearch_per_core_s": 21.0, "tantivy_s": 0.5,
           f"raw_usearch_{ingest_compare.ADD_THREADS}_threads_s": 20.0}  # fmt: skip
    ratios = ingest_compare._ratios(row)
    assert ratios["vectors.end_to_end/raw_usearch"] == 1.5
    assert ratios["text.ingest/tantivy"] == 8.0
    assert ratios["first_recall/warm_p50"] == pytest.approx(3.0)
    assert ratios["vectors.end_to_end.baseline/this"] == 1.5
    assert ratios["text.end_to_end.baseline/this"] == 1.25
    assert ratios["default.ingest/text.ingest"] == 1.5
    assert ratios["default.end_to_end.baseline/this"] == pytest.approx(17.5 / 6.0)
    assert ratios["vectors.baseline_end_to_end/raw_usearch"] == 2.25
    row["tantivy_s"] = None
    assert ingest_compare._ratios(row)["text.ingest/tantivy"] is None
    trees = {"this": Path("a"), "baseline": Path("b")}
    row["tantivy_s"] = 0.5
    rendered = ingest_compare._table({"100k": row}, trees).render()
    assert rendered.count("100k") >= 2 and "baseline" in rendered and "21.00 s" in rendered
    assert "152" in rendered  # the first recall's disk reads
    for cell in ("1.50", "2.25", "8.00", "10.00", "3.50"):  # each tree's ratios over the floors
        assert cell in rendered, cell
