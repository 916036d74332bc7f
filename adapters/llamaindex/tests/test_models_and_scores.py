"""Issue 14 for LlamaIndex: your own embedding model, readable similarities, blank nodes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.postprocessor import SimilarityPostprocessor
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
    (VectorStoreQueryMode.HYBRID, {}),
    (VectorStoreQueryMode.HYBRID, {"alpha": 0.5}),
    (VectorStoreQueryMode.HYBRID, {"alpha": 0.0}),
    (VectorStoreQueryMode.HYBRID, {"alpha": 1.0}),
    (VectorStoreQueryMode.TEXT_SEARCH, {}),
    (VectorStoreQueryMode.MMR, {}),
]


def _engine_mode(mode: VectorStoreQueryMode, alpha: float | None) -> str | None:
    """The engine recall a query mode is exactly, or ``None`` for the composed modes."""
    if mode == VectorStoreQueryMode.TEXT_SEARCH or alpha == 0.0:
        return "text"
    if mode == VectorStoreQueryMode.DEFAULT or alpha == 1.0:
        return "vector"
    if mode == VectorStoreQueryMode.HYBRID and alpha is None:
        return "hybrid"
    return None


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=8, unique=True), query=TEXTS)
def test_similarities_are_the_engine_probabilities(texts: list[str], query: str) -> None:
    vs = _store_of(texts)
    try:
        _check_engine_probabilities(vs, texts, query)
    finally:
        vs.client.close()


def _check_engine_probabilities(vs: EmbedmindVectorStore, texts: list[str], query: str) -> None:
    store = vs.client
    vector = MODEL.get_query_embedding(query)
    by_mode = {
        mode: {
            vs._node(h.memory).node_id: h.score
            for h in store.recall(query, k=len(texts), mode=mode, vector=vector)
        }
        for mode in ("text", "vector", "hybrid")
    }
    for mode, extra in MODES:
        result = _query(vs, query, mode, len(texts), **extra)
        scores = result.similarities or []
        assert all(0.0 <= s <= 1.0 for s in scores), (mode, extra, scores)
        found = [(node.node_id, s) for node, s in zip(result.nodes or [], scores, strict=True)]
        engine = _engine_mode(mode, extra.get("alpha"))
        if engine is not None:  # exactly the engine's recall: its hits, order and scores
            expected = list(by_mode[engine].items())
            assert found == expected, (mode, extra)
        elif mode == VectorStoreQueryMode.MMR:  # each node's vector-channel probability
            assert all(s == by_mode["vector"][n] for n, s in found)
        else:  # weighted RRF: the stronger channel's probability
            for n, s in found:
                assert s == max(by_mode[c][n] for c in ("text", "vector") if n in by_mode[c])


@pytest.mark.parametrize(("mode", "extra"), MODES)
def test_an_exact_match_ranks_first_and_scores_above_the_others(
    mode: VectorStoreQueryMode, extra: dict[str, float]
) -> None:
    vs = _store_of(["tea grows in assam", "coffee beans from brazil", "leaf tea"])
    result = _query(vs, "coffee beans from brazil", mode, 3, **extra)
    assert result.ids and result.ids[0] == "n1"
    scores = result.similarities or []
    assert 0.0 < scores[0] <= 1.0 and all(s <= scores[0] for s in scores)


def test_similarity_cutoff_keeps_exactly_the_nodes_scoring_at_least_it() -> None:
    vs = _store_of(["tea grows in assam", "coffee beans from brazil", "leaf tea", "coffee"])
    retriever = VectorStoreIndex.from_vector_store(vs, embed_model=MODEL).as_retriever(
        similarity_top_k=4, vector_store_query_mode=VectorStoreQueryMode.HYBRID
    )
    nodes = retriever.retrieve("coffee from brazil")
    scores = [n.score or 0.0 for n in nodes]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    for cutoff in [0.0, *scores, 1.0]:
        kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(nodes)
        assert [n.node.node_id for n in kept] == [
            n.node.node_id for n in nodes if (n.score or 0.0) >= cutoff
        ]
