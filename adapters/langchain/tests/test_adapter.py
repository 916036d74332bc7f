"""What the standard suites do not cover: scores, MMR, filters, from_texts, chains, fragments."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_embedmind import (
    EmbedmindChatMessageHistory,
    EmbedmindEmbeddings,
    EmbedmindRetriever,
    EmbedmindVectorStore,
)

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.policies import FragmentPolicy

TEXTS = ["apples are red", "bananas are yellow", "cherries are red", "the sky is blue"]


@pytest.fixture
def store() -> Iterator[embedmind.Store]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as s:
        yield s


@pytest.fixture
def vectorstore(store: embedmind.Store) -> EmbedmindVectorStore:
    vs = EmbedmindVectorStore(store)
    vs.add_texts(
        TEXTS,
        [{"n": i, "colour": t.split()[-1]} for i, t in enumerate(TEXTS)],
        ids=[f"t{i}" for i in range(4)],
    )
    return vs


def test_relevance_scores_are_in_unit_range_and_ordered(vectorstore: EmbedmindVectorStore) -> None:
    scored = vectorstore.similarity_search_with_relevance_scores("red apples", k=4)
    scores = [s for _, s in scored]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scored[0][0].id == "t0"


def test_filters_use_the_where_language(vectorstore: EmbedmindVectorStore) -> None:
    docs = vectorstore.similarity_search("fruit", k=4, filter={"colour": "red"})
    assert {d.id for d in docs} == {"t0", "t2"}
    docs = vectorstore.similarity_search("fruit", k=4, filter={"n": {"$gte": 2}})
    assert {d.id for d in docs} == {"t2", "t3"}


def test_metadata_round_trips_exactly(vectorstore: EmbedmindVectorStore) -> None:
    assert vectorstore.get_by_ids(["t1"]) == [
        Document(page_content="bananas are yellow", metadata={"n": 1, "colour": "yellow"}, id="t1")
    ]


def test_mmr_prefers_diversity(vectorstore: EmbedmindVectorStore) -> None:
    vectorstore.add_texts(["apples are red", "apples are red!"], ids=["dup1", "dup2"])
    plain = vectorstore.similarity_search("apples are red", k=2)
    diverse = vectorstore.max_marginal_relevance_search(
        "apples are red", k=2, fetch_k=6, lambda_mult=0.1
    )
    assert len(diverse) == 2
    assert len({d.page_content.rstrip("!") for d in diverse}) == 2
    assert len({d.page_content.rstrip("!") for d in plain}) == 1


def test_from_texts_and_as_retriever_with_threshold() -> None:
    vs = EmbedmindVectorStore.from_texts(
        TEXTS, embedding=EmbedmindEmbeddings("hashing"), metadatas=[{"i": i} for i in range(4)]
    )
    retriever = vs.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.3, "k": 4}
    )  # a relevance is a probability: the vector channel alone gives an exact match about 0.48
    docs = retriever.invoke("the sky is blue")
    assert docs
    assert docs[0].page_content == "the sky is blue"
    assert all(d.page_content in TEXTS for d in docs)
    assert len(vs.as_retriever(search_kwargs={"k": 2}).invoke("red")) == 2


def test_retriever_positional_in_an_lcel_chain(vectorstore: EmbedmindVectorStore) -> None:
    retriever = EmbedmindRetriever(vectorstore.store, k=2, namespace="default")
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    llm = FakeListChatModel(responses=["Apples and cherries are red."])

    def format_docs(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    assert chain.invoke("which fruits are red?") == "Apples and cherries are red."
    docs = retriever.invoke("red fruit")
    assert len(docs) == 2
    extra = docs[0].metadata["embedmind"]
    assert {"score", "rank", "channels", "namespace", "created_at"} <= set(extra)
    assert docs[0].metadata["colour"] in {"red", "yellow", "blue"}


def test_retriever_honours_invoke_overrides(vectorstore: EmbedmindVectorStore) -> None:
    retriever = EmbedmindRetriever(store=vectorstore.store, k=4)
    assert len(retriever.invoke("red", k=1)) == 1
    docs = retriever.invoke("red", where={"colour": "red"})
    assert {d.id for d in docs} == {"t0", "t2"}


async def test_retriever_async(vectorstore: EmbedmindVectorStore) -> None:
    retriever = EmbedmindRetriever(vectorstore.store, k=3)
    docs = await retriever.ainvoke("blue sky")
    assert docs[0].id == "t3"
    found = await vectorstore.asimilarity_search("blue sky", k=1)
    assert found[0].id == "t3"


def test_fragment_mode_returns_locators() -> None:
    policy = FragmentPolicy(chunker="sentences", window=30)
    with embedmind.Store.open(
        ":memory:", embedder=HashingEmbedder(64), fragment_policy=policy
    ) as store:
        text = "Tea grows in Assam. Coffee grows in Brazil. Coffee is roasted."
        store.remember(text, id="crops", metadata={"kind": "doc"})
        docs = EmbedmindRetriever(store, fragments=True, k=5, max_per_record=1).invoke(
            "coffee brazil"
        )
        assert len(docs) == 1
        start, end = docs[0].metadata["embedmind"]["locator"]
        assert text[start:end] == docs[0].page_content
        assert docs[0].metadata["kind"] == "doc"


def test_chat_history_records_a_session(store: embedmind.Store) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    history = EmbedmindChatMessageHistory(store, "s1")
    history.add_messages([HumanMessage("hi, I'm Ana"), AIMessage("hello Ana")])
    other = EmbedmindChatMessageHistory(store, "s2")
    other.add_messages([HumanMessage("unrelated")])
    assert [m.content for m in history.messages] == ["hi, I'm Ana", "hello Ana"]
    history.clear()
    assert history.messages == []
    assert [m.content for m in other.messages] == ["unrelated"]


def test_the_entry_point_module_imports_no_langchain() -> None:
    import subprocess
    import sys

    code = "import sys, langchain_embedmind.plugin; print([m for m in sys.modules if m.startswith('langchain_core')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_adapter_announces_itself_to_embedmind() -> None:
    from embedmind import plugins

    info = plugins.registry().adapters["langchain"]
    assert info["framework"] == "langchain_core"
    assert info["available"] is True
