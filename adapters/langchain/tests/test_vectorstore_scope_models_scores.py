"""Issue 14 for the LangChain vector store: your own model, namespace scopes, readable scores."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_embedmind import EmbedmindEmbeddings, EmbedmindRetriever, EmbedmindVectorStore

import embedmind
from embedmind import InvalidInputError
from embedmind.embedders.hashing import HashingEmbedder

NAMESPACES = ["user/a", "user/a/notes", "user/b", "user/bc", "other"]
SCOPES: list[str | list[str]] = [
    "user/*", "user/a/*", "user/a", "user/b", "other", ["user/a", "other"], ["user/b/*", "user/bc"],
]  # fmt: skip


def _in(namespace: str, scope: str | list[str]) -> bool:
    """A plain-Python oracle of a recall scope: exact names and ``x/*`` subtrees."""
    for item in [scope] if isinstance(scope, str) else scope:
        root = item.removesuffix("/*")
        if namespace == item or (item.endswith("/*") and (namespace + "/").startswith(root + "/")):
            return True
    return False


@pytest.fixture
def store() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as s:
        yield s


# -- your own embedding model ------------------------------------------------------


def test_a_store_without_embedder_is_refused_at_construction_with_the_line_to_write() -> None:
    fix = r"Store\.open\(path, embedder=embedding\)"
    with (
        embedmind.Store.open(":memory:", embedder=None) as text_only,
        pytest.raises(InvalidInputError, match=fix),
    ):
        EmbedmindVectorStore(text_only, embedding=DeterministicFakeEmbedding(size=1536))


def test_a_store_with_another_model_is_refused_at_construction(store: embedmind.Store) -> None:
    with pytest.raises(InvalidInputError, match="hashing-64") as caught:
        EmbedmindVectorStore(store, embedding=DeterministicFakeEmbedding(size=1536))
    assert "Store.open(path, embedder=embedding)" in str(caught.value)
    assert store.stats().live == 0


def test_the_store_opened_with_your_model_works_with_that_model_or_an_equal_one() -> None:
    model = DeterministicFakeEmbedding(size=1536)
    with embedmind.Store.open(":memory:", embedder=model) as own:
        vs = EmbedmindVectorStore(own, embedding=DeterministicFakeEmbedding(size=1536))
        vs.add_texts(["tea grows in Assam", "coffee grows in Brazil"], ids=["tea", "coffee"])
        assert vs.similarity_search("coffee grows in Brazil", k=1)[0].id == "coffee"
    opened = EmbedmindVectorStore(embedding=model)  # the adapter opens the store with it
    opened.add_texts(["tea grows in Assam"], ids=["tea"])
    assert opened.similarity_search("tea grows in Assam", k=1)[0].id == "tea"


def test_embedmind_embeddings_of_the_store_model_are_accepted(store: embedmind.Store) -> None:
    vs = EmbedmindVectorStore(store, embedding=EmbedmindEmbeddings("hashing"))
    vs.add_texts(["apples are red"], ids=["a"])
    assert vs.similarity_search("apples are red", k=1)[0].id == "a"


# -- empty content ---------------------------------------------------------------------


class _Recording(Embeddings):
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.inner = DeterministicFakeEmbedding(size=16)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.mark.parametrize("texts", [[""], ["  \n\t"], ["fine", ""]])
def test_blank_texts_are_a_typed_error_and_write_nothing(texts: list[str]) -> None:
    model = _Recording()
    vs = EmbedmindVectorStore(embedding=model)
    with pytest.raises(InvalidInputError, match="empty or only whitespace"):
        vs.add_texts(texts)
    assert vs.store.stats().live == 0
    assert all(t.strip() for t in model.seen)  # the model never saw a blank text


def test_blank_texts_through_the_store_embedder_are_a_typed_error(store: embedmind.Store) -> None:
    with pytest.raises(InvalidInputError, match="empty or only whitespace"):
        EmbedmindVectorStore(store).add_texts([""])
    assert store.stats().live == 0


# -- namespace scopes ----------------------------------------------------------------


def _fill(store: embedmind.Store, placement: list[int]) -> dict[str, str]:
    homes = {f"m{i}": NAMESPACES[n] for i, n in enumerate(placement)}
    store.remember_many(
        [embedmind.Draft(f"note {i} about tea", id=i, namespace=ns) for i, ns in homes.items()]
    )
    return homes


@settings(max_examples=30, deadline=None)
@given(
    placement=st.lists(st.integers(0, len(NAMESPACES) - 1), min_size=1, max_size=12),
    scope=st.sampled_from(SCOPES),
)
def test_reads_cover_exactly_the_scope(placement: list[int], scope: str | list[str]) -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        homes = _fill(store, placement)
        expected = {i for i, ns in homes.items() if _in(ns, scope)}
        vs = EmbedmindVectorStore(store, namespace=scope)
        assert {d.id for d in vs.similarity_search("tea", k=50)} == expected
        assert {d.id for d in vs.get_by_ids(list(homes))} == expected
        retriever = EmbedmindRetriever(store, namespace=scope, k=50, mode="vector")
        assert {d.id for d in retriever.invoke("tea")} == expected
        vs.delete(list(homes))  # deletes reach only into the scope
        assert {m.id for m in store.get_many(list(homes))} == set(homes) - expected


def test_a_pattern_scope_writes_only_where_told(store: embedmind.Store) -> None:
    readonly = EmbedmindVectorStore(store, namespace="user/*")
    with pytest.raises(InvalidInputError, match="write_namespace"):
        readonly.add_texts(["tea"])
    assert store.stats().live == 0
    vs = EmbedmindVectorStore(store, namespace="user/*", write_namespace="user/c")
    (new_id,) = vs.add_texts(["tea"])
    assert [d.id for d in vs.get_by_ids([new_id])] == [new_id]
    assert [m.namespace for m in store.iter()] == ["user/c"]
    assert [d.id for d in vs.similarity_search("tea", k=5)] == [new_id]
    with pytest.raises(InvalidInputError, match="outside the read scope"):
        EmbedmindVectorStore(store, namespace="user/*", write_namespace="other")
    with pytest.raises(InvalidInputError, match="namespace"):
        EmbedmindVectorStore(store, namespace="user/**")


# -- scores --------------------------------------------------------------------------


TEXTS = st.lists(
    st.text(st.sampled_from("abcdefgh "), min_size=3, max_size=20).filter(str.strip),
    min_size=1,
    max_size=8,
    unique=True,
)
QUERIES = st.text(st.sampled_from("abcdefgh "), min_size=1, max_size=20).filter(str.strip)


@settings(max_examples=25, deadline=None)
@given(texts=TEXTS, query=QUERIES)
def test_scores_are_clipped_cosines_in_unit_range_falling_with_rank(
    texts: list[str], query: str
) -> None:
    model = DeterministicFakeEmbedding(size=32)
    vs = EmbedmindVectorStore(embedding=model)
    vs.add_texts(texts)
    q = np.asarray(model.embed_query(query))
    q /= np.linalg.norm(q)
    scored = vs.similarity_search_with_score(query, k=len(texts))
    scores = [s for _, s in scored]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    for doc, score in scored:  # oracle: the brute-force cosine, clipped at 0
        d = np.asarray(model.embed_documents([doc.page_content])[0])
        assert score == pytest.approx(max(0.0, float(q @ d / np.linalg.norm(d))), abs=1e-5)


@settings(max_examples=25, deadline=None)
@given(texts=TEXTS, query=QUERIES, threshold=st.floats(0.0, 1.0))
def test_relevance_is_the_engine_probability_and_the_threshold_a_filter_of_it(
    texts: list[str], query: str, threshold: float
) -> None:
    model = DeterministicFakeEmbedding(size=32)
    vs = EmbedmindVectorStore(embedding=model)
    try:
        _check_relevance(vs, model, texts, query, threshold)
    finally:
        vs.store.close()


def _check_relevance(
    vs: EmbedmindVectorStore, model: Embeddings, texts: list[str], query: str, threshold: float
) -> None:
    vs.add_texts(texts)
    k = len(texts)
    relevance = vs.similarity_search_with_relevance_scores(query, k=k)
    hits = vs.store.recall(query, k=k, mode="vector", vector=model.embed_query(query))
    assert [(d.page_content, s) for d, s in relevance] == [(h.content, h.score) for h in hits]
    scores = [s for _, s in relevance]
    assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    expected = [(d.id, s) for d, s in relevance if s >= threshold]
    kept = vs.similarity_search_with_relevance_scores(query, k=k, score_threshold=threshold)
    assert [(d.id, s) for d, s in kept] == expected
    retriever = vs.as_retriever(
        search_type="similarity_score_threshold",
        search_kwargs={"score_threshold": threshold, "k": k},
    )
    assert [d.id for d in retriever.invoke(query)] == [i for i, _ in expected]
    assert [d.id for d in asyncio.run(retriever.ainvoke(query))] == [i for i, _ in expected]


@pytest.mark.parametrize("threshold", [float("nan"), -0.1, 1.5, float("inf")])
def test_a_threshold_outside_unit_range_is_a_typed_error(
    store: embedmind.Store, threshold: float
) -> None:
    vs = EmbedmindVectorStore(store)
    vs.add_texts(["apples are red"])
    with pytest.raises(InvalidInputError, match="min_score"):
        vs.similarity_search_with_relevance_scores("apples", k=1, score_threshold=threshold)
    with pytest.raises(InvalidInputError, match="min_score"):
        EmbedmindRetriever(store, min_score=threshold).invoke("apples")


@settings(max_examples=20, deadline=None)
@given(texts=TEXTS, query=QUERIES, threshold=st.floats(0.0, 1.0))
def test_the_retriever_min_score_is_a_filter_of_its_unthresholded_documents(
    texts: list[str], query: str, threshold: float
) -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        store.remember_many(texts)
        k = len(texts)
        full = EmbedmindRetriever(store, k=k).invoke(query)
        scores = [d.metadata["embedmind"]["score"] for d in full]
        assert all(0.0 <= s <= 1.0 for s in scores)
        kept = EmbedmindRetriever(store, k=k, min_score=threshold).invoke(query)
        assert kept == [d for d in full if d.metadata["embedmind"]["score"] >= threshold]
        with pytest.raises(InvalidInputError, match="min_score"):
            EmbedmindRetriever(store, min_score=threshold, fragments=True).invoke(query)


def test_an_exact_match_scores_near_one_and_an_unrelated_text_near_zero(
    store: embedmind.Store,
) -> None:
    vs = EmbedmindVectorStore(store)
    vs.add_texts(["apples are red", "xylophone quartz"], ids=["hit", "miss"])
    scores = dict((d.id, s) for d, s in vs.similarity_search_with_score("apples are red", k=2))
    assert scores["hit"] == pytest.approx(1.0, abs=1e-5)
    assert scores["miss"] == pytest.approx(0.0, abs=1e-5)  # no shared word: cosine 0, not 0.5
    relevance = dict(
        (d.id, s) for d, s in vs.similarity_search_with_relevance_scores("apples are red", k=2)
    )
    assert 0.0 <= relevance["miss"] < relevance["hit"] <= 1.0
