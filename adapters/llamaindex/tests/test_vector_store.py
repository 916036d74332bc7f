"""End to end through VectorStoreIndex, filters against LlamaIndex's reference semantics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQueryMode,
)
from llama_index.vector_stores.embedmind import EmbedmindEmbedding, EmbedmindVectorStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

DOCS = [
    Document(
        text="Tea grows in Assam and Darjeeling.",
        metadata={"crop": "tea", "year": 2020, "tags": ["drink", "leaf"]},
        doc_id="tea",
    ),
    Document(
        text="Coffee grows in Brazil and Ethiopia.",
        metadata={"crop": "coffee", "year": 2021, "tags": ["drink", "bean"]},
        doc_id="coffee",
    ),
    Document(
        text="Cocoa grows in Ghana and the Ivory Coast.",
        metadata={"crop": "cocoa", "year": 2022, "tags": ["bean"]},
        doc_id="cocoa",
    ),
]


@pytest.fixture(autouse=True)
def offline_models() -> None:
    Settings.embed_model = EmbedmindEmbedding("hashing")
    Settings.llm = MockLLM()


def _index(store: embedmind.Store | None = None) -> tuple[VectorStoreIndex, EmbedmindVectorStore]:
    vs = EmbedmindVectorStore(
        store or embedmind.Store.open(":memory:", embedder=HashingEmbedder(64))
    )
    index = VectorStoreIndex.from_documents(
        DOCS, storage_context=StorageContext.from_defaults(vector_store=vs)
    )
    return index, vs


def test_from_documents_and_every_query_mode() -> None:
    index, _ = _index()
    for mode, extra in [
        (VectorStoreQueryMode.DEFAULT, {}),
        (VectorStoreQueryMode.TEXT_SEARCH, {}),
        (VectorStoreQueryMode.SPARSE, {}),
        (VectorStoreQueryMode.HYBRID, {"alpha": 0.5}),
        (VectorStoreQueryMode.HYBRID, {"alpha": 0.0}),
        (VectorStoreQueryMode.HYBRID, {"alpha": 1.0}),
        (VectorStoreQueryMode.MMR, {"vector_store_kwargs": {"mmr_threshold": 0.5}}),
    ]:
        nodes = index.as_retriever(
            similarity_top_k=2, vector_store_query_mode=mode, **extra
        ).retrieve("coffee Brazil")
        assert nodes, mode
        assert "Coffee" in nodes[0].node.get_content(), (mode, extra)
        assert nodes[0].node.metadata["crop"] == "coffee"
        assert "__llama_index__" not in nodes[0].node.metadata


def test_nested_filters_and_async() -> None:
    index, _ = _index()
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="year", operator=FilterOperator.GTE, value=2021),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="crop", operator=FilterOperator.EQ, value="cocoa"),
                    MetadataFilter(key="tags", operator=FilterOperator.CONTAINS, value="drink"),
                ],
                condition=FilterCondition.OR,
            ),
        ],
        condition=FilterCondition.AND,
    )
    nodes = index.as_retriever(similarity_top_k=5, filters=filters).retrieve("grows")
    assert {n.node.metadata["crop"] for n in nodes} == {"coffee", "cocoa"}


async def test_aretrieve() -> None:
    index, _ = _index()
    nodes = await index.as_retriever(similarity_top_k=1).aretrieve("tea Assam")
    assert nodes[0].node.metadata["crop"] == "tea"


def test_from_vector_store_on_a_reopened_file_insert_delete_update(tmp_path: Path) -> None:
    path = tmp_path / "li.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        _index(store)
    with embedmind.Store.open(path, embedder=HashingEmbedder(64)) as store:
        vs = EmbedmindVectorStore(store)
        index = VectorStoreIndex.from_vector_store(vs)
        assert (
            index.as_retriever(similarity_top_k=1).retrieve("cocoa Ghana")[0].node.metadata["crop"]
            == "cocoa"
        )
        index.insert(
            Document(
                text="Vanilla grows in Madagascar.", metadata={"crop": "vanilla"}, doc_id="vanilla"
            )
        )
        assert (
            index.as_retriever(similarity_top_k=1)
            .retrieve("vanilla Madagascar")[0]
            .node.metadata["crop"]
            == "vanilla"
        )
        index.delete_ref_doc("tea", delete_from_docstore=True)
        crops = {
            n.node.metadata["crop"]
            for n in index.as_retriever(similarity_top_k=10).retrieve("grows")
        }
        assert "tea" not in crops
        index.update_ref_doc(
            Document(
                text="Cocoa now also grows in Ecuador.", metadata={"crop": "cocoa"}, doc_id="cocoa"
            )
        )
        texts = [
            n.node.get_content() for n in index.as_retriever(similarity_top_k=10).retrieve("cocoa")
        ]
        assert any("Ecuador" in t for t in texts)
        assert not any("Ivory Coast" in t for t in texts)
        assert len(vs.get_nodes()) == 3
        vs.delete_nodes(
            filters=MetadataFilters(filters=[MetadataFilter(key="crop", value="vanilla")])
        )
        assert {n.metadata["crop"] for n in vs.get_nodes()} == {"coffee", "cocoa"}
        vs.clear()
        assert vs.get_nodes() == []


def test_query_engine_with_a_mock_llm() -> None:
    index, _ = _index()
    response = index.as_query_engine(similarity_top_k=1).query("Where does coffee grow?")
    assert response.source_nodes[0].node.metadata["crop"] == "coffee"


def test_splitter_locators_slice_the_source_and_the_cap_holds() -> None:
    long_text = " ".join(f"Sentence {i} talks about coffee beans from farm {i}." for i in range(60))
    other = " ".join(f"Line {i} talks about coffee shops in town {i}." for i in range(60))
    docs = [Document(text=long_text, doc_id="long"), Document(text=other, doc_id="other")]
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    index = VectorStoreIndex.from_documents(
        docs, storage_context=StorageContext.from_defaults(vector_store=vs),
        transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)],
    )  # fmt: skip
    retriever = index.as_retriever(similarity_top_k=4, vector_store_kwargs={"max_per_record": 1})
    nodes = retriever.retrieve("coffee")
    assert len(nodes) == 2
    assert {n.node.ref_doc_id for n in nodes} == {"long", "other"}
    sources = {"long": long_text, "other": other}
    for n in index.as_retriever(similarity_top_k=20).retrieve("coffee"):
        text = sources[n.node.ref_doc_id]
        assert text[n.node.start_char_idx : n.node.end_char_idx] == n.node.get_content()


OPS = {
    "n": [FilterOperator.EQ, FilterOperator.NE, FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT,
          FilterOperator.LTE, FilterOperator.IN, FilterOperator.NIN, FilterOperator.IS_EMPTY],
    "s": [FilterOperator.EQ, FilterOperator.NE, FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE,
          FilterOperator.IN, FilterOperator.NIN, FilterOperator.IS_EMPTY],
    "l": [FilterOperator.CONTAINS, FilterOperator.ANY, FilterOperator.ALL, FilterOperator.IS_EMPTY],
}  # fmt: skip


def _reference(f: MetadataFilter, meta: dict[str, Any]) -> bool:
    """LlamaIndex's reference semantics, evaluated in Python."""
    if f.operator == FilterOperator.IS_EMPTY:
        return meta.get(f.key) in (None, "", [])
    if f.key not in meta:
        return f.operator in (FilterOperator.NE, FilterOperator.NIN)
    v, x = meta[f.key], f.value
    match f.operator:
        case FilterOperator.EQ:
            return v == x
        case FilterOperator.NE:
            return v != x
        case FilterOperator.GT:
            return v > x
        case FilterOperator.GTE:
            return v >= x
        case FilterOperator.LT:
            return v < x
        case FilterOperator.LTE:
            return v <= x
        case FilterOperator.IN:
            return v in x
        case FilterOperator.NIN:
            return v not in x
        case FilterOperator.CONTAINS:
            return x in v
        case FilterOperator.ANY:
            return any(i in v for i in x)
        case FilterOperator.ALL:
            return all(i in v for i in x)
        case FilterOperator.TEXT_MATCH:
            return x in v
        case FilterOperator.TEXT_MATCH_INSENSITIVE:
            return x.lower() in v.lower()
    raise AssertionError(f.operator)


def _evaluate(filters: MetadataFilters, meta: dict[str, Any]) -> bool:
    results = [
        _evaluate(f, meta) if isinstance(f, MetadataFilters) else _reference(f, meta)
        for f in filters.filters
    ]
    if filters.condition == FilterCondition.OR:
        return any(results)
    if filters.condition == FilterCondition.NOT:
        return not all(results)
    return all(results)


def _value(key: str) -> st.SearchStrategy[Any]:
    if key == "n":
        return st.integers(0, 4)
    if key == "s":
        return st.sampled_from(["", "Tea", "tea leaf", "coffee", "Coffee bean"])
    return st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)


@st.composite
def _filter(draw: st.DrawFn) -> MetadataFilter:
    key = draw(st.sampled_from(["n", "s", "l"]))
    op = draw(st.sampled_from(OPS[key]))
    if op in (FilterOperator.IN, FilterOperator.NIN):
        value: Any = draw(st.lists(_value(key), min_size=1, max_size=3))
    elif op in (FilterOperator.ANY, FilterOperator.ALL):
        value = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2))
    elif op == FilterOperator.CONTAINS:
        value = draw(st.sampled_from(["a", "b", "c"]))
    elif op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
        value = draw(st.sampled_from(["tea", "Tea", "bean", "x"]))
    elif op == FilterOperator.IS_EMPTY:
        value = None
    else:
        value = draw(_value(key))
    return MetadataFilter(key=key, operator=op, value=value)


_filters = st.recursive(
    _filter().map(lambda f: MetadataFilters(filters=[f])),
    lambda inner: st.builds(
        lambda parts, cond: MetadataFilters(filters=parts, condition=cond),
        st.lists(st.one_of(inner, _filter()), min_size=1, max_size=3),
        st.sampled_from([FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT]),
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(
    metas=st.lists(
        st.dictionaries(st.sampled_from(["n", "s", "l"]), st.none()), min_size=1, max_size=8
    ).flatmap(
        lambda shapes: st.tuples(
            *[st.fixed_dictionaries({k: _value(k) for k in shape}) for shape in shapes]
        )
    ),
    filters=_filters,
)
def test_filter_translation_matches_the_reference(
    metas: tuple[dict[str, Any], ...], filters: MetadataFilters
) -> None:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=None))
    from llama_index.core.schema import TextNode

    vs.add([TextNode(text=f"node {i}", id_=f"n{i}", metadata=dict(m)) for i, m in enumerate(metas)])
    got = {n.node_id for n in vs.get_nodes(filters=filters)}
    expected = {f"n{i}" for i, m in enumerate(metas) if _evaluate(filters, m)}
    assert got == expected
