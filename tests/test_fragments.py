"""The fragment index: the fragment seed's test cases, rewritten against this API."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.fragments import UNWIRED_MESSAGE, FragmentRecallError, FragmentRetriever, Locator
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
    import embedmind.fragment_writer as writer

    def boom(*args: object, **kwargs: object) -> int:
        raise RuntimeError("add boom")

    monkeypatch.setattr(writer.rows, "add", boom)
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
