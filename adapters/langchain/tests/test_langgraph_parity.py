"""EmbedmindStore and LangGraph's InMemoryStore side by side: same order, same scores.

Equivalents of LangGraph's own store tests (``libs/checkpoint/tests/test_store.py``):
``test_vector_store_initialization``, ``test_vector_update_with_embedding``
(sync and async), ``test_embed_with_path`` and the field-path cases, run on
both stores with one deterministic embedder. Every query search is compared
item by item: keys in the same order and scores equal within 1e-6 (the
engine keeps unit float32 vectors; LangGraph computes float64 cosines).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_embedmind import EmbedmindStore
from langgraph.store.base import BaseStore, SearchItem
from langgraph.store.memory import InMemoryStore

import embedmind

DIMS = 500


class CharacterEmbeddings(Embeddings):
    """A bag of characters, as LangGraph's tests embed (deterministic, never zero for text)."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for ch in text:
            vector[ord(ch) % self.dims] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]


@pytest.fixture
def embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings()


Pair = tuple[EmbedmindStore, InMemoryStore]


@pytest.fixture
def make_pair(embeddings: CharacterEmbeddings) -> Iterator[Any]:
    engines: list[embedmind.Store] = []

    def make(**index: Any) -> Pair:
        config: Any = {"dims": embeddings.dims, "embed": embeddings, **index}
        engine = embedmind.Store.open(":memory:", embedder=embeddings)
        engines.append(engine)
        return EmbedmindStore(engine, index=config), InMemoryStore(index=config)

    yield make
    for engine in engines:
        engine.close()


def put_both(pair: Pair, *args: Any, **kwargs: Any) -> None:
    for store in pair:
        store.put(*args, **kwargs)


async def aput_both(pair: Pair, *args: Any, **kwargs: Any) -> None:
    for store in pair:
        await store.aput(*args, **kwargs)


def same(ours: Sequence[SearchItem], reference: Sequence[SearchItem]) -> list[SearchItem]:
    """Assert one ranking: keys, values and scores position by position; return ours."""
    assert [(i.namespace, i.key, i.value) for i in ours] == [
        (i.namespace, i.key, i.value) for i in reference
    ]
    for mine, theirs in zip(ours, reference, strict=True):
        if theirs.score is None:
            assert mine.score is None, mine.key
        else:
            assert mine.score == pytest.approx(theirs.score, abs=1e-6), mine.key
    return list(ours)


def search_both(pair: Pair, prefix: tuple[str, ...], **kwargs: Any) -> list[SearchItem]:
    return same(pair[0].search(prefix, **kwargs), pair[1].search(prefix, **kwargs))


async def asearch_both(pair: Pair, prefix: tuple[str, ...], **kwargs: Any) -> list[SearchItem]:
    return same(await pair[0].asearch(prefix, **kwargs), await pair[1].asearch(prefix, **kwargs))


def test_vector_store_initialization(make_pair: Any, embeddings: CharacterEmbeddings) -> None:
    for store in make_pair():
        assert store.index_config is not None
        assert store.index_config["dims"] == embeddings.dims
        assert store.index_config["embed"] == embeddings
        assert store.embeddings is embeddings
        assert [p for p, _ in store.index_config["__tokenized_fields"]] == ["$"]


def test_vector_update_with_embedding(make_pair: Any) -> None:
    pair = make_pair()
    put_both(pair, ("test",), "doc1", {"text": "zany zebra Xerxes"})
    put_both(pair, ("test",), "doc2", {"text": "something about dogs"})
    put_both(pair, ("test",), "doc3", {"text": "text about birds"})
    initial = search_both(pair, ("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None and -1.0 <= initial_score <= 1.0

    put_both(pair, ("test",), "doc1", {"text": "new text about dogs"})
    after = search_both(pair, ("test",), query="Zany Xerxes")
    after_score = next(r.score for r in after if r.key == "doc1")
    assert after_score is not None and after_score < initial_score
    for r in search_both(pair, ("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score

    put_both(pair, ("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = search_both(pair, ("test",), query="new text about dogs", limit=3)
    assert "doc4" not in [r.key for r in top]
    everything = search_both(pair, ("test",), query="new text about dogs", limit=10)
    assert everything[-1].key == "doc4" and everything[-1].score is None  # after every scored one


async def test_vector_update_with_embedding_async(make_pair: Any) -> None:
    pair = make_pair()
    await aput_both(pair, ("test",), "doc1", {"text": "zany zebra Xerxes"})
    await aput_both(pair, ("test",), "doc2", {"text": "something about dogs"})
    await aput_both(pair, ("test",), "doc3", {"text": "text about birds"})
    initial = await asearch_both(pair, ("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    await aput_both(pair, ("test",), "doc1", {"text": "new text about dogs"})
    after = await asearch_both(pair, ("test",), query="Zany Xerxes")
    after_score = next(r.score for r in after if r.key == "doc1")
    assert after_score is not None and initial[0].score is not None
    assert after_score < initial[0].score
    await aput_both(pair, ("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = await asearch_both(pair, ("test",), query="new text about dogs", limit=3)
    assert "doc4" not in [r.key for r in top]


DOC1 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd", "key4": "eee"}
DOC2 = {"key0": "fff", "key1": "ggg", "key2": "hhh", "key3": "iii", "key4": "jjj"}


def test_embed_with_path(make_pair: Any) -> None:
    pair = make_pair(fields=["key0", "key1", "key3"])
    put_both(pair, ("test",), "doc1", DOC1)
    put_both(pair, ("test",), "doc2", DOC2)
    for query in ["aaa", "bbb", "ddd", "ggg", "iii"]:  # indexed fields: exact matches
        top = search_both(pair, ("test",), query=query)
        assert top[0].score == pytest.approx(1.0, abs=1e-6)
    for query in ["ccc", "eee", "hhh"]:  # fields outside `fields` never match exactly
        top = search_both(pair, ("test",), query=query)
        assert all(r.score is not None and r.score < 0.9 for r in top)

    put_both(pair, ("test",), "doc3", {"key0": "aaa", "key2": "ccc"}, index=False)
    assert search_both(pair, ("test",), query="aaa")[-1].key == "doc3"
    put_both(pair, ("test",), "doc4", {"key0": "kkk", "key2": "lll"}, index=["key2"])
    top = search_both(pair, ("test",), query="lll")
    assert (top[0].key, top[0].score) == ("doc4", pytest.approx(1.0, abs=1e-6))
    assert search_both(pair, ("test",), query="kkk")[0].key != "doc4"  # key0 not indexed here


FIELD_DOC = {
    "title": "orchards of the north",
    "notes": [{"text": "pears ripen late"}, {"text": "apples keep all winter"}],
    "tags": ["fruit", "cold climate", "storage"],
    "meta": {"author": {"name": "Ines"}, "year": 1998},
    "body": "a long essay about trees",
}
FIELD_DOC2 = {
    "title": "harbour cooking",
    "notes": [{"text": "grilled sardines"}, {"text": "salt cod stew"}],
    "tags": ["fish", "shellfish"],  # InMemoryStore fails on one text at two paths
    "meta": {"author": {"name": "Rui"}, "year": 2004},
    "body": "recipes from the coast",
}


@pytest.mark.parametrize(
    "fields",
    [
        ["$"],
        ["title"],
        ["notes[*].text"],
        ["tags[*]"],
        ["tags[0]", "tags[-1]"],
        ["meta.author.name"],
        ["meta"],
        ["notes[1].text", "title"],
        ["{title,body}"],
        ["missing", "title"],
        ["notes[*]"],
    ],
)
@pytest.mark.parametrize(
    "query", ["apples keep all winter", "Ines", "salt cod", "fish", "trees", "orchards"]
)
def test_field_paths_score_by_the_best_field(make_pair: Any, fields: list[str], query: str) -> None:
    pair = make_pair(fields=fields)
    put_both(pair, ("docs", "a"), "one", FIELD_DOC)
    put_both(pair, ("docs", "b"), "two", FIELD_DOC2)
    put_both(pair, ("docs", "a"), "three", {"title": "unrelated"}, index=False)
    put_both(pair, ("docs",), "four", {"body": "no configured field"})
    search_both(pair, ("docs",), query=query)
    search_both(pair, ("docs",), query=query, limit=1)
    search_both(pair, ("docs", "a"), query=query)


# Not ["$"]: InMemoryStore 1.2 tokenizes a per-put "$" as a field named "$" and
# indexes nothing; embedmind reads it as the whole value, as in `fields`.
@pytest.mark.parametrize("index", [["title"], ["notes[*].text", "meta.year"], ["tags[*]"]])
def test_per_put_index_paths(make_pair: Any, index: list[str]) -> None:
    pair = make_pair(fields=["body"])
    put_both(pair, ("docs",), "one", FIELD_DOC, index=index)
    put_both(pair, ("docs",), "two", FIELD_DOC2)
    for query in ["orchards of the north", "pears", "1998", "cold climate", "coast"]:
        search_both(pair, ("docs",), query=query)


def test_filters_and_offsets_with_a_query(make_pair: Any) -> None:
    pair = make_pair(fields=["text"])
    # Distinct letters per text: InMemoryStore breaks cosine ties by namespace
    # insertion order, which is not a contract, so the data has no ties.
    words = ["apple", "kiwi", "plum", "fig", "lime", "date", "pear", "yuzu"]
    for n, word in enumerate(words):
        put_both(pair, ("m", str(n % 2)), f"k{n}", {"text": f"{word} tea", "n": n})
    search_both(pair, ("m",), query="lime tea", filter={"n": {"$gte": 3}})
    search_both(pair, ("m",), query="plum tea", limit=3, offset=2)
    search_both(pair, ("m", "1"), query="kiwi", limit=2)


def test_updating_to_index_false_drops_the_old_vectors(make_pair: Any) -> None:
    # A deliberate difference: InMemoryStore 1.2 keeps the vectors of a previous
    # put when an item is re-put with index=False or other paths, so it keeps
    # ranking the item by text it no longer indexes; embedmind replaces them.
    ours, _ = make_pair(fields=["text"])
    ours.put(("t",), "a", {"text": "quinoa salad"})
    ours.put(("t",), "b", {"text": "lentil soup"})
    ours.put(("t",), "a", {"text": "quinoa salad"}, index=False)
    found = ours.search(("t",), query="quinoa salad")
    assert [(r.key, r.score is None) for r in found] == [("b", False), ("a", True)]


def test_scores_are_similarities_not_rrf(make_pair: Any) -> None:
    ours, _ = make_pair(fields=["text"])
    ours.put(("s",), "x", {"text": "identical words"})
    ours.put(("s",), "y", {"text": "identical words"})
    found = ours.search(("s",), query="identical words")
    assert [r.score for r in found] == [pytest.approx(1.0, abs=1e-6)] * 2


def test_a_graph_node_searches_the_configured_store(make_pair: Any) -> None:
    from typing import TypedDict

    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        question: str
        context: str
        answer: str

    model = GenericFakeChatModel(messages=iter([AIMessage(content="You like green tea.")]))

    def recall(state: State, *, store: BaseStore) -> dict[str, str]:
        found = store.search(("memories", "ana"), query=state["question"], limit=1)
        return {"context": found[0].value["text"] if found else ""}

    def respond(state: State) -> dict[str, str]:
        reply = model.invoke(f"Context: {state['context']}\nQ: {state['question']}")
        return {"answer": str(reply.content)}

    builder = StateGraph(State)
    builder.add_node("recall", recall)
    builder.add_node("respond", respond)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "respond")
    builder.add_edge("respond", END)
    ours, _ = make_pair(fields=["text"])
    ours.put(("memories", "ana"), "1", {"text": "ana prefers green tea"})
    ours.put(("memories", "ana"), "2", {"text": "ana cycles to work"})
    ours.put(("memories", "bo"), "3", {"text": "bo prefers green tea too"})
    graph = builder.compile(store=ours)
    out = graph.invoke({"question": "what tea does ana prefer?", "context": "", "answer": ""})
    assert out["context"] == "ana prefers green tea"
    assert out["answer"] == "You like green tea."
