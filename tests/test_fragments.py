"""The fragment index: the fragment seed's test cases, rewritten against this API."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import hnsw
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import commit as commit_path
from embedmind.fragments import (
    UNWIRED_MESSAGE,
    FragmentHit,
    FragmentRecallError,
    FragmentRetriever,
    Locator,
)
from embedmind.policies import EvictionPolicy, FragmentPolicy

MARKERS = ["cat", "dog", "fish"]


class MarkerEmbedder:
    """The seed's deterministic keyword-count feature space (plus a tiny bias axis)."""

    model_id, dims, metric, fingerprint, max_tokens = "markers", 4, "cos", "markers-v1", 64

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.fail: str | None = None

    def _vector(self, text: str) -> list[float]:
        lower = text.lower()
        return [float(lower.count(m)) for m in MARKERS] + [0.001]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.fail == "error":
            return np.zeros((len(texts), self.dims), dtype=np.float32)  # unusable output
        if self.fail == "raise":
            raise RuntimeError("embedder kaboom")
        return np.asarray([self._vector(t) for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._vector(text), dtype=np.float32)

    def spans(self, text: str, *, overlap_tokens: int = 32) -> list[tuple[int, int]]:
        return [(0, len(text))]


def words_chunker(text: str, window: int, overlap: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


@pytest.fixture
def embedder() -> MarkerEmbedder:
    return MarkerEmbedder()


@pytest.fixture
def store(embedder: MarkerEmbedder) -> Iterator[embedmind.Store]:
    policy = FragmentPolicy(chunker=words_chunker, window=1, overlap=0)
    with embedmind.Store.open(":memory:", embedder=embedder, fragment_policy=policy) as s:
        yield s


def test_embeds_fragments_on_write_and_spans_are_queryable(store: embedmind.Store) -> None:
    store.remember("cat dog", id="doc-a")
    assert (store.fragments.record_count, store.fragments.fragment_count) == (1, 2)
    hit = store.fragments.query("cat", k=1)[0]
    assert (hit.record_id, hit.locator, hit.text) == ("doc-a", Locator(0, 3), "cat")


def test_whole_record_replace_leaves_no_stale_fragment(store: embedmind.Store) -> None:
    store.remember("cat", id="doc-a")
    store.remember("dog fish", id="doc-a")
    assert store.fragments.fragment_count == 2
    assert all(h.text != "cat" for h in store.fragments.query("cat", k=5))
    assert store.fragments.query("fish", k=1)[0].score == pytest.approx(1.0, abs=1e-3)
    assert store.fragments.put("doc-a", [((0, 3), "fish")]) == 1  # explicit put replaces too
    assert [h.text for h in store.fragments.query("dog", k=5)] == ["fish"]


def test_identical_content_is_not_re_embedded(
    store: embedmind.Store, embedder: MarkerEmbedder
) -> None:
    store.remember("cat dog", id="doc-a")
    store.remember("cat dog", id="doc-a")
    fragment_calls = [c for c in embedder.calls if c == ["cat", "dog"]]  # one per word span
    assert len(fragment_calls) == 1


def test_removed_on_delete_forget_and_idempotent_remove(store: embedmind.Store) -> None:
    store.remember("cat dog", id="doc-a")
    store.remember("fish", id="doc-b")
    store.delete("doc-a")
    assert store.fragments.record_count == 1
    assert all(h.record_id != "doc-a" for h in store.fragments.query("cat", k=5))
    store.forget("doc-b")
    assert store.fragments.fragment_count == 0
    assert store.fragments.remove("doc-b") is False
    store.remember("cat", id="doc-c")
    assert store.fragments.remove("doc-c") is True
    assert store.fragments.remove("doc-c") is False


def test_removed_on_cap_cull_eviction(embedder: MarkerEmbedder) -> None:
    policy = FragmentPolicy(chunker=words_chunker, window=1, overlap=0)
    with embedmind.Store.open(
        ":memory:", embedder=embedder, fragment_policy=policy,
        eviction=EvictionPolicy(max_records=2, namespaces="mtm"),
    ) as store:  # fmt: skip
        for i, text in enumerate(["cat", "dog", "fish"]):
            store.remember(text, id=f"turn-{i}", namespace="mtm")
        assert store.fragments.record_count == 2
        assert store.get("turn-0") is None
        assert all(h.record_id != "turn-0" for h in store.fragments.query("cat", k=5))
        store.remember("cat cat", id="elsewhere", namespace="other")  # out of the policy's scope
        assert store.get("turn-1") is not None


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        ("error", r"fragment embedding 'doc-a' failed"),
        ("raise", r"fragment embedding 'doc-a' threw.*kaboom"),
    ],
)
def test_embedder_failure_is_logged_and_the_write_stands(
    store: embedmind.Store,
    embedder: MarkerEmbedder,
    caplog: pytest.LogCaptureFixture,
    fail: str,
    message: str,
) -> None:
    embedder.fail = fail
    with caplog.at_level(logging.WARNING):
        store.remember("cat", id="doc-a", vector=[1.0, 0.0, 0.0, 0.0])
    assert store.get("doc-a") is not None
    assert store.fragments.record_count == 0
    assert any(re.search(message, r.getMessage()) for r in caplog.records)


def test_index_failure_is_logged_and_the_write_stands(
    store: embedmind.Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import embedmind.backend.sqlite.fragment_rows as rows

    def boom(*args: object, **kwargs: object) -> int:
        raise RuntimeError("add boom")

    monkeypatch.setattr(rows, "add", boom)
    with caplog.at_level(logging.WARNING):
        store.remember("cat", id="doc-a")
    assert store.get("doc-a") is not None
    assert any(
        re.search(r"fragment add for 'doc-a' failed.*add boom", r.getMessage())
        for r in caplog.records
    )


def test_an_index_without_a_policy_does_no_fragment_work(embedder: MarkerEmbedder) -> None:
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        store.remember("cat", id="doc-a")
        store.delete("doc-a")
        assert embedder.calls == [["cat"]]  # the memory's own vector only
        assert store.fragments.fragment_count == 0


def test_cap_is_applied_before_the_cut_and_defaults(embedder: MarkerEmbedder) -> None:
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        store.remember("cat cat dog", id="doc-a")
        store.remember("fish fish", id="doc-b")
        store.fragments.put("doc-a", [((0, 3), "cat"), ((4, 7), "cat"), ((8, 11), "dog")])
        store.fragments.put("doc-b", [((0, 4), "fish"), ((5, 9), "fish")])
        retriever = FragmentRetriever(store)
        assert retriever.capabilities.supports_fragment_recall
        capped = retriever.retrieve("cat", k=5, max_per_record=1)
        assert capped[0].record_id == "doc-a"
        assert capped[0].locator == Locator(0, 3)
        assert sum(h.record_id == "doc-a" for h in capped) == 1
        assert {h.record_id for h in capped} == {"doc-a", "doc-b"}
        assert len(retriever.retrieve("cat")) == 5  # k defaults to 10, no cap


def test_the_retriever_fails_loudly(
    embedder: MarkerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as text_only:
        retriever = FragmentRetriever(text_only)
        assert not retriever.capabilities.supports_fragment_recall
        with pytest.raises(FragmentRecallError, match=re.escape(UNWIRED_MESSAGE)):
            retriever.retrieve("hi")
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        retriever = FragmentRetriever(store)
        monkeypatch.setattr(
            embedder,
            "embed_query",
            lambda text: (_ for _ in ()).throw(RuntimeError("no embed model")),
        )
        with pytest.raises(
            FragmentRecallError, match="fragment recall: query embedding failed: no embed model"
        ):
            retriever.retrieve("q")
        monkeypatch.undo()
        monkeypatch.setattr(
            store.fragments,
            "query",
            lambda *a, **k: (_ for _ in ()).throw(RuntimeError("socket hangup")),
        )
        with pytest.raises(
            FragmentRecallError, match="fragment recall: fragment query failed: socket hangup"
        ):
            retriever.retrieve("q")


def test_bad_fragments_are_rejected(embedder: MarkerEmbedder) -> None:
    with embedmind.Store.open(":memory:", embedder=embedder) as store:
        store.remember("x", id="r")
        for bad in (
            [((3, 3), "cat")],
            [((5, 2), "cat")],
            [((0, 1), [1.0, 2.0])],
            [(("a", 2), "cat")],
        ):
            with pytest.raises(embedmind.InvalidInputError):
                store.fragments.put("r", bad)  # type: ignore[arg-type]
        with pytest.raises(embedmind.NotFoundError):
            store.fragments.put("missing", [((0, 1), "cat")])


@settings(max_examples=60, deadline=None)
@given(
    fragments=st.lists(
        st.tuples(
            st.integers(0, 5), st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4)
        ),
        min_size=1,
        max_size=40,
    ),
    cap=st.one_of(st.none(), st.integers(1, 4)),
    k=st.integers(1, 12),
    query=st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4),
)
def test_query_equals_a_greedy_brute_force_reference(
    fragments: list[tuple[int, list[float]]], cap: int | None, k: int, query: list[float]
) -> None:
    vectors = [np.asarray(v, dtype=np.float64) for _, v in fragments]
    q = np.asarray(query, dtype=np.float64)
    if np.linalg.norm(q) < 1e-3 or any(np.linalg.norm(v) < 1e-3 for v in vectors):
        return
    with embedmind.Store.open(":memory:", embedder=MarkerEmbedder()) as store:
        per_record: dict[int, list[tuple[tuple[int, int], list[float]]]] = {}
        for i, (record, vector) in enumerate(fragments):
            per_record.setdefault(record, []).append(((i, i + 1), vector))
        for record, items in per_record.items():
            store.remember(f"record {record}", id=f"r{record}", vector=[0.0, 0.0, 0.0, 1.0])
            store.fragments.put(f"r{record}", items)
        got = store.fragments.query(query, k=k, max_per_record=cap)
        scored = sorted(
            (
                (float(v @ q / np.linalg.norm(v) / np.linalg.norm(q)), i, rec)
                for i, ((rec, _), v) in enumerate(zip(fragments, vectors, strict=True))
            ),
            key=lambda t: (-t[0], t[1]),
        )
        taken: dict[int, int] = {}
        expected = []
        for score, _i, rec in scored:
            if cap is not None and taken.get(rec, 0) >= cap:
                continue
            taken[rec] = taken.get(rec, 0) + 1
            expected.append((f"r{rec}", score))
            if len(expected) == k:
                break
        assert [h.score for h in got] == pytest.approx([s for _, s in expected], abs=2e-3)
        counts: dict[str, int] = {}
        for h in got:
            counts[h.record_id] = counts.get(h.record_id, 0) + 1
        assert cap is None or max(counts.values()) <= cap
        assert len(got) == len(expected)


# -- the fragment index file: saved, trusted only when verified, rebuilt otherwise -----------

WORDS = "apple orchard river boat mountain snow city lights forest desert ocean valley".split()
QUERIES = ["apple orchard", "river boat", "mountain snow", "city lights forest"]
DIMS = 32
K = 8


def _text(record: int, j: int, salt: int = 0) -> str:
    # A unique token per fragment keeps every vector distinct (few ties to blur results).
    a, b = WORDS[(record * 5 + j + salt) % len(WORDS)], WORDS[(record * 3 + 2 * j + 1) % 12]
    return f"{a} {b} frag{record}x{j}s{salt}"


def _put_all(store: embedmind.Store, records: range, per: int = 5, salt: int = 0) -> None:
    for r in records:
        items = [((10 * j, 10 * j + 9), _text(r, j, salt)) for j in range(per)]
        store.fragments.put(f"doc{r}", items)


def _fill(path: Path, records: int = 40, dims: int = DIMS, salt: int = 0) -> None:
    with embedmind.Store.open(path, embedder=HashingEmbedder(dims)) as store:
        store.remember_many(
            [embedmind.Draft(f"document {r}", id=f"doc{r}") for r in range(records)]
        )
        _put_all(store, range(records), salt=salt)


def _truth(path: Path) -> dict[tuple[str, int], str]:
    """Every fragment's text by ``(record id, start)``, read from the database."""
    out: dict[tuple[str, int], str] = {}
    with embedmind.Store.open(path, embedder=None) as store:
        for memory in store.iter():
            for hit in _all_fragments_of(store, memory.id):
                assert hit.text is not None
                out[(hit.record_id, hit.locator.start)] = hit.text
    return out


def _all_fragments_of(store: embedmind.Store, record_id: str) -> list[FragmentHit]:
    with store._db.read() as conn:
        key = conn.execute("SELECT key FROM memories WHERE id = ?", (record_id,)).fetchone()[0]
        rows = conn.execute(
            "SELECT start, end, text FROM fragments WHERE key = ? ORDER BY start", (key,)
        ).fetchall()
    return [FragmentHit(record_id, Locator(s, e), 0.0, t) for s, e, t in rows]


def _assert_exact(hits: dict[str, list[list[object]]], truth: dict[tuple[str, int], str]) -> None:
    """Each hit scores what brute force gives its fragment, and the list is the brute-force top."""
    embedder = HashingEmbedder(DIMS)
    keys = list(truth)
    matrix = embedder.embed_documents([truth[key] for key in keys])
    for query in QUERIES:
        sims = matrix @ embedder.embed_query(query)
        exact = dict(zip(keys, sims.tolist(), strict=True))
        got = [(str(r), int(s), float(score)) for r, s, score in hits[query]]  # type: ignore[call-overload]
        # f16 storage blurs near-ties: compare scores, not the order of equal ones.
        assert [score for _, _, score in got] == pytest.approx(
            sorted(sims.tolist(), reverse=True)[:K], abs=2e-3
        ), query
        for record, start, score in got:
            assert score == pytest.approx(exact[(record, start)], abs=2e-3), (query, record, start)


def _query_all(store: embedmind.Store) -> dict[str, list[list[object]]]:
    return {
        q: [[h.record_id, h.locator.start, h.score] for h in store.fragments.query(q, k=K)]
        for q in QUERIES
    }


def _log_length(store: embedmind.Store) -> int:
    with store._db.read() as conn:
        return int(conn.execute("SELECT count(*) FROM fragment_log").fetchone()[0])


def _registered(store: embedmind.Store) -> tuple[int, int] | None:
    """``(seq of the registered fragment file, last fragment log seq)``."""
    with store._db.read() as conn:
        row = conn.execute("SELECT seq FROM index_files WHERE name = 'fragments'").fetchone()
        last = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'fragment_log'"
        ).fetchone()
    return None if row is None else (int(row[0]), int(last[0]))


def test_close_saves_the_fragment_index_and_a_reopen_loads_it(tmp_path: Path) -> None:
    path = tmp_path / "s.mind"
    _fill(path)  # this process never queried fragments: close must save anyway
    assert (tmp_path / "s.mind-fragments").is_file()
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        registered = _registered(store)
        assert registered is not None and registered[0] == registered[1]
        assert _log_length(store) == 0, "the save trims the log"
        hits = _query_all(store)
        assert store.fragments.index is not None
        assert store.fragments.index.rebuilt == 0, "the saved file was trusted"
    _assert_exact(hits, _truth(path))
    saved = (tmp_path / "s.mind-fragments").stat().st_ino  # a save replaces the file
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        store.fragments.query("apple", k=1)
    assert (tmp_path / "s.mind-fragments").stat().st_ino == saved, "nothing to save"


def test_a_store_without_fragments_writes_no_fragment_file(tmp_path: Path) -> None:
    path = tmp_path / "s.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        store.remember("apple orchard", id="a")
        store.recall("apple", k=1)
        assert store.fragments.query("apple", k=1) == []
    assert (tmp_path / "s.mind-vectors").is_file()
    assert not (tmp_path / "s.mind-fragments").exists()


def test_a_lagging_fragment_file_is_caught_up_by_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.mind"
    with monkeypatch.context() as patch:
        patch.setattr(commit_path, "SAVE_INDEX_AFTER", 1)  # the file is saved by the last put
        _fill(path)
    writer = embedmind.Store.open(path, embedder=HashingEmbedder(DIMS))
    writer.remember_many([embedmind.Draft(f"document {r}", id=f"doc{r}") for r in range(40, 50)])
    _put_all(writer, range(35, 50), salt=1)  # replaces 5 records' fragments, adds 10
    assert writer.fragments.remove("doc0")
    writer._db.close()  # abandoned, as by kill -9: the file is never saved
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        hits = _query_all(store)
        assert store.fragments.index is not None and store.fragments.index.rebuilt == 0
    truth = _truth(path)
    assert ("doc0", 0) not in truth and truth[("doc40", 0)] == _text(40, 0, 1)
    _assert_exact(hits, truth)


def test_the_fragment_log_stays_bounded_over_many_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved at the memory index's threshold, trimmed by each save; a reader keeps up."""
    threshold, per_write = 50, 8  # a put or re-derive of 4 fragments logs 4 removals + 4 adds
    monkeypatch.setattr(commit_path, "SAVE_INDEX_AFTER", threshold)
    path = tmp_path / "s.mind"
    policy = FragmentPolicy(chunker=words_chunker, window=1, overlap=0)
    embedder = HashingEmbedder(DIMS)
    writer = embedmind.Store.open(path, embedder=embedder, fragment_policy=policy)
    reader = embedmind.Store.open(path, embedder=embedder)  # another process's view
    assert reader.fragments.query("apple", k=1) == []  # built (empty) before any write
    longest = 0
    for i in range(300):
        r = i % 20
        words = " ".join([*_text(r, i).split()[:2], f"w{i}", f"v{i}"])
        if i % 2:  # fragment-embed-on-write replaces the record's fragments
            writer.remember(words, id=f"doc{r}")
        elif i >= 20:  # an explicit put replaces them too
            writer.fragments.put(f"doc{r}", [((j, j + 1), w) for j, w in enumerate(words.split())])
        else:
            writer.remember(words, id=f"doc{r}")
        longest = max(longest, _log_length(writer))
        if i % 37 == 0:
            reader.fragments.query("apple orchard", k=3)  # replays, or reloads after a trim
    assert longest < threshold + per_write, longest
    registered = _registered(writer)
    assert registered is not None and registered[0] > 40 * threshold
    hits, truth = _query_all(reader), {}
    assert reader.fragments.index is not None
    assert reader.fragments.index.rebuilt == 1, "behind a trim the reader reloads the file"
    for memory in writer.iter():
        for hit in _all_fragments_of(writer, memory.id):
            truth[(hit.record_id, hit.locator.start)] = str(hit.text)
    writer.close()
    reader.close()
    _assert_exact(hits, truth)


def test_vacuum_saves_a_compacted_fragment_index(tmp_path: Path) -> None:
    path = tmp_path / "s.mind"
    _fill(path)
    store = embedmind.Store.open(path, embedder=HashingEmbedder(DIMS))
    for r in range(0, 40, 3):
        store.forget(f"doc{r}")
    store.vacuum()
    store._db.close()  # abandoned: only what vacuum saved is on disk
    with embedmind.Store.open(path, embedder=HashingEmbedder(DIMS)) as store:
        assert _log_length(store) == 0
        hits = _query_all(store)
        assert store.fragments.index is not None and store.fragments.index.rebuilt == 0
        assert len(store.fragments.index) == store.fragments.fragment_count, "no tombstones"
    _assert_exact(hits, _truth(path))


CHILD = """
import json, sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
queries, k = json.loads(sys.argv[1]), int(sys.argv[2])
for line in sys.stdin:
    case, path = line.split(maxsplit=1)
    print("CASE", case, flush=True)  # so a death names its case
    with embedmind.Store.open(path.strip(), embedder=HashingEmbedder(32)) as store:
        hits = {
            q: [[h.record_id, h.locator.start, h.score] for h in store.fragments.query(q, k=k)]
            for q in queries
        }
        rebuilt = store.fragments.index.rebuilt
    print("RESULT", case, json.dumps({"hits": hits, "rebuilt": rebuilt}), flush=True)
"""


def _in_child(cases: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Open each store in one child process and query its fragments; a signal fails the test."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(QUERIES), str(K)],
        input="".join(f"{case} {path}\n" for case, path in cases.items()),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    started = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("CASE")]
    assert result.returncode == 0, (
        f"child died ({result.returncode}) at {started[-1:]}:\n{result.stderr[-3000:]}"
    )
    out = {}
    for line in result.stdout.splitlines():
        if line.startswith("RESULT"):
            _, case, payload = line.split(maxsplit=2)
            out[case] = json.loads(payload)
    return out


def _usearch_file_of_another_metric(path: Path) -> None:
    index = hnsw._usearch_index()(ndim=DIMS, metric="l2sq", dtype="f16")
    index.add(np.arange(50), np.random.default_rng(1).random((50, DIMS), dtype=np.float32))
    index.save(str(path))


def _flip(path: Path, at: float) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A store whose fragment file was saved twice (the first save kept), and foreign files."""
    root = tmp_path_factory.mktemp("pristine")
    _fill(root / "s.mind")
    stale = root.parent / "stale.mind-fragments"
    shutil.copyfile(root / "s.mind-fragments", stale)
    with embedmind.Store.open(root / "s.mind", embedder=HashingEmbedder(DIMS)) as store:
        _put_all(store, range(10, 20), salt=2)
    other = tmp_path_factory.mktemp("other")
    _fill(other / "s.mind", salt=3)
    _fill(other / "narrow.mind", dims=16)
    return {
        "root": root, "stale": stale, "other": other / "s.mind-fragments",
        "narrow": other / "narrow.mind-fragments",
    }  # fmt: skip


DAMAGES: dict[str, Callable[[Path, dict[str, Path]], None]] = {
    "missing": lambda f, p: f.unlink(),
    "empty": lambda f, p: f.write_bytes(b""),
    "truncated": lambda f, p: f.write_bytes(f.read_bytes()[: f.stat().st_size // 2]),
    "bit-flip-header": lambda f, p: _flip(f, 0.001),
    "bit-flip-middle": lambda f, p: _flip(f, 0.5),
    "garbage": lambda f, p: f.write_bytes(os.urandom(4096)),
    "stale": lambda f, p: shutil.copyfile(p["stale"], f),
    "another-stores-file": lambda f, p: shutil.copyfile(p["other"], f),
    "the-memory-vectors-file": lambda f, p: shutil.copyfile(f.parent / "s.mind-vectors", f),
    "wrong-dims": lambda f, p: shutil.copyfile(p["narrow"], f),
    "wrong-metric": lambda f, p: (f.unlink(), _usearch_file_of_another_metric(f)),  # type: ignore[func-returns-value]
    "symlink": lambda f, p: (f.unlink(), f.symlink_to(p["other"])),  # type: ignore[func-returns-value]
    "directory": lambda f, p: (f.unlink(), f.mkdir()),  # type: ignore[func-returns-value]
}


@pytest.mark.timeout(600)
def test_a_damaged_fragment_file_is_rebuilt_with_exact_results(
    tmp_path: Path, pristine: dict[str, Path]
) -> None:
    truth = _truth(pristine["root"] / "s.mind")
    cases = {}
    for damage, apply in DAMAGES.items():
        copy = tmp_path / damage
        shutil.copytree(pristine["root"], copy, symlinks=True)
        apply(copy / "s.mind-fragments", pristine)
        cases[damage] = copy / "s.mind"
    cases["intact"] = tmp_path / "intact" / "s.mind"
    shutil.copytree(pristine["root"], cases["intact"].parent)
    first = _in_child(cases)
    assert set(first) == set(cases)
    for case, got in first.items():
        assert got["rebuilt"] == (0 if case == "intact" else 1), case
        _assert_exact(got["hits"], truth)
    # Each close saved the rebuilt index: the next process trusts it (a directory
    # in the file's place cannot be replaced, so that store rebuilds again).
    again = _in_child(cases)
    for case, got in again.items():
        assert got["rebuilt"] == (1 if case == "directory" else 0), case
        _assert_exact(got["hits"], truth)
