"""Issue 14 for LlamaIndex: your own embedding model, readable similarities, blank nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode
from llama_index.vector_stores.embedmind import EmbedmindEmbedding, EmbedmindVectorStore

import embedmind
from embedmind import InvalidInputError
from embedmind.embedders.hashing import HashingEmbedder

FIX = "EmbedmindVectorStore(embedmind.Store.open(path, embedder=Settings.embed_model))"
DOCS = [Document(text="Tea grows in Assam.", doc_id="tea"), Document(text="Coffee.", doc_id="c")]
MODEL = EmbedmindEmbedding("hashing")
WORDS = st.sampled_from(["tea", "coffee", "grows", "in", "assam", "brazil", "leaf", "bean"])
TEXTS = st.lists(WORDS, min_size=1, max_size=6).map(" ".join)


@pytest.fixture
def mock_1536(monkeypatch: pytest.MonkeyPatch) -> MockEmbedding:
    # The private field: the property setter/getter would resolve LlamaIndex's
    # remote default model when monkeypatch restores it.
    model = MockEmbedding(embed_dim=1536)
    monkeypatch.setattr(Settings, "_embed_model", model)
    return model


def _index(vs: EmbedmindVectorStore) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        DOCS, storage_context=StorageContext.from_defaults(vector_store=vs)
    )


# -- your own embedding model ------------------------------------------------------


def test_an_adapter_opened_store_uses_the_settings_model(
    mock_1536: MockEmbedding, tmp_path: Path
) -> None:
    path = str(tmp_path / "m.mind")
    vs = EmbedmindVectorStore(path=path)
    found = _index(vs).as_retriever(similarity_top_k=2).retrieve("tea")
    assert {n.node.ref_doc_id for n in found} == {"tea", "c"}
    assert vs.client.embedder is not None and vs.client.embedder.dims == 1536
    vs.client.close()
    reopened = EmbedmindVectorStore(path=path)  # the same model again: no mismatch
    assert len(reopened.get_nodes()) == 2
    reopened.client.close()


def test_a_store_of_the_settings_model_works(mock_1536: MockEmbedding) -> None:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=Settings.embed_model))
    assert _index(vs).as_retriever(similarity_top_k=1).retrieve("tea")


@pytest.mark.parametrize("embedder", [HashingEmbedder(64), None], ids=["other-model", "none"])
def test_another_store_model_is_refused_with_the_line_to_write(
    mock_1536: MockEmbedding, embedder: object
) -> None:
    store = embedmind.Store.open(":memory:", embedder=embedder)
    with pytest.raises(InvalidInputError, match=r"nodes\[0\]\.embedding") as caught:
        _index(EmbedmindVectorStore(store))
    assert FIX in str(caught.value)
    assert store.stats().live == 0


def test_a_query_embedding_of_another_length_is_refused() -> None:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    with pytest.raises(InvalidInputError, match="1536 numbers") as caught:
        vs.query(VectorStoreQuery(query_str="tea", query_embedding=[0.1] * 1536))
    assert FIX in str(caught.value)


# -- blank nodes --------------------------------------------------------------------


@pytest.mark.parametrize("embedding", [None, [1.0] * 64])
def test_a_blank_node_is_a_typed_error_and_writes_nothing(embedding: list[float] | None) -> None:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    nodes = [
        TextNode(text="fine", id_="ok"),
        TextNode(text=" \n", id_="blank", embedding=embedding),
    ]
    with pytest.raises(InvalidInputError, match="empty or only whitespace"):
        vs.add(nodes)
    assert vs.get_nodes() == []


# -- similarities ----------------------------------------------------------------------


def _store_of(texts: list[str]) -> EmbedmindVectorStore:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    vs.add(
        [
            TextNode(text=t, id_=f"n{i}", embedding=MODEL.get_text_embedding(t))
            for i, t in enumerate(texts)
        ]
    )
    return vs


def _query(vs: EmbedmindVectorStore, text: str, mode: VectorStoreQueryMode, k: int, **extra: float):
    q = VectorStoreQuery(
        query_str=text,
        query_embedding=MODEL.get_query_embedding(text),
        similarity_top_k=k,
        mode=mode,
        alpha=extra.get("alpha"),
    )
    return vs.query(q, mmr_threshold=0.5)


MODES = [
    (VectorStoreQueryMode.DEFAULT, {}),
    (VectorStoreQueryMode.HYBRID, {"alpha": 0.5}),
    (VectorStoreQueryMode.HYBRID, {"alpha": 0.0}),
    (VectorStoreQueryMode.TEXT_SEARCH, {}),
    (VectorStoreQueryMode.MMR, {}),
]


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=8, unique=True), query=TEXTS)
def test_similarities_are_in_unit_range_and_documented(texts: list[str], query: str) -> None:
    vs = _store_of(texts)
    q = np.asarray(MODEL.get_query_embedding(query))
    q /= np.linalg.norm(q)
    for mode, extra in MODES:
        result = _query(vs, query, mode, len(texts), **extra)
        scores = result.similarities or []
        assert all(0.0 <= s <= 1.0 for s in scores), (mode, extra, scores)
        text_only = mode == VectorStoreQueryMode.TEXT_SEARCH or extra.get("alpha") == 0.0
        if text_only or mode == VectorStoreQueryMode.DEFAULT:  # documented: falls with rank
            assert scores == sorted(scores, reverse=True), (mode, extra)
        if text_only and scores:
            assert scores[0] == 1.0  # relative to the query's best BM25
            continue
        for node, score in zip(result.nodes or [], scores, strict=True):  # the clipped cosine
            d = np.asarray(MODEL.get_text_embedding(node.get_content()))
            assert score == pytest.approx(max(0.0, float(q @ d / np.linalg.norm(d))), abs=1e-5)


@pytest.mark.parametrize(("mode", "extra"), MODES)
def test_an_exact_match_scores_near_one(
    mode: VectorStoreQueryMode, extra: dict[str, float]
) -> None:
    vs = _store_of(["tea grows in assam", "coffee beans from brazil", "leaf tea"])
    result = _query(vs, "coffee beans from brazil", mode, 3, **extra)
    assert result.ids and result.ids[0] == "n1"
    assert (result.similarities or [0.0])[0] == pytest.approx(1.0, abs=1e-5)
