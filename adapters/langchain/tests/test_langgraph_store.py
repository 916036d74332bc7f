"""EmbedmindStore against LangGraph's InMemoryStore on the same scripted operations."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_embedmind import EmbedmindStore
from langchain_embedmind.store_namespaces import item_id
from langchain_embedmind.stores import RESERVED
from langgraph.store.memory import InMemoryStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder


@pytest.fixture
def pair() -> Iterator[tuple[EmbedmindStore, InMemoryStore]]:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        yield EmbedmindStore(store), InMemoryStore()


SCRIPT: list[tuple[tuple[str, ...], str, dict[str, Any] | None]] = [
    (("users", "alice"), "prefs", {"drink": "tea", "level": 3}),
    (("users", "alice"), "home", {"city": "lisbon", "level": 1}),
    (("users", "alicex"), "prefs", {"drink": "coffee", "level": 2}),
    (("users", "bob"), "prefs", {"drink": "water", "level": 5}),
    (("users", "bob"), "home", {"city": "oslo", "level": 2}),
    (("users", "bob", "work"), "desk", {"floor": 4, "level": 4}),
    (("a", "b"), "k", {"v": 1}),
    (("a", "bc"), "k", {"v": 2}),
    (("users", "alice"), "home", {"city": "porto", "level": 2}),  # update
    (("users", "bob"), "prefs", None),  # delete
]


def _items(found: list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(i.namespace, i.key, i.value) for i in found]


def test_same_results_as_the_reference(pair: tuple[EmbedmindStore, InMemoryStore]) -> None:
    ours, reference = pair
    for namespace, key, value in SCRIPT:
        for store in (ours, reference):
            if value is None:
                store.delete(namespace, key)
            else:
                store.put(namespace, key, value)
    for namespace, key, _ in SCRIPT:
        a, b = ours.get(namespace, key), reference.get(namespace, key)
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert (a.namespace, a.key, a.value) == (b.namespace, b.key, b.value)
    for prefix, filter_ in [
        (("users",), None),
        (("users", "alice"), None),
        (("a", "b"), None),
        (("users",), {"level": {"$gte": 2}}),
        (("users",), {"drink": "tea"}),
        (("users",), {"level": {"$ne": 3}}),
    ]:
        a = sorted(_items(ours.search(prefix, filter=filter_, limit=20)))
        b = sorted(_items(reference.search(prefix, filter=filter_, limit=20)))
        assert a == b, (prefix, filter_)
    for kwargs in [
        {},
        {"prefix": ("users",)},
        {"suffix": ("prefs",)},
        {"prefix": ("users", "*")},
        {"max_depth": 1},
        {"max_depth": 2, "prefix": ("users",)},
        {"limit": 2, "offset": 1},
    ]:
        assert ours.list_namespaces(**kwargs) == reference.list_namespaces(**kwargs), kwargs


def test_prefix_look_alikes_are_isolated(pair: tuple[EmbedmindStore, InMemoryStore]) -> None:
    ours, _ = pair
    ours.put(("a", "b"), "k", {"v": 1})
    ours.put(("a", "bc"), "k", {"v": 2})
    ours.put(("a", "b/c"), "k", {"v": 3})  # a slash inside a label never merges segments
    assert [i.value for i in ours.search(("a", "b"))] == [{"v": 1}]
    assert sorted(ours.list_namespaces(prefix=("a",))) == [("a", "b"), ("a", "b/c"), ("a", "bc")]


def test_query_search_ranks_by_relevance(pair: tuple[EmbedmindStore, InMemoryStore]) -> None:
    ours, _ = pair
    ours.put(("m",), "1", {"text": "alice loves green tea"}, index=["text"])
    ours.put(("m",), "2", {"text": "bob repairs old bicycles"}, index=["text"])
    found = ours.search(("m",), query="green tea", limit=2)
    assert found[0].key == "1"
    assert found[0].score is not None


def test_ttl_and_refresh(pair: tuple[EmbedmindStore, InMemoryStore]) -> None:
    ours, _ = pair
    ours.put(("t",), "k", {"v": 1}, ttl=5)
    item = ours.store.get(item_id(ours._namespace(("t",)), "k"))
    assert item is not None and item.expires_at is not None
    assert ours.get(("t",), "k", refresh_ttl=True) is not None


async def test_async_batch(pair: tuple[EmbedmindStore, InMemoryStore]) -> None:
    ours, _ = pair
    await ours.aput(("x",), "k", {"v": 1})
    assert (await ours.aget(("x",), "k")).value == {"v": 1}


def test_an_emptied_namespace_is_no_longer_listed(
    pair: tuple[EmbedmindStore, InMemoryStore],
) -> None:
    # A deliberate difference: InMemoryStore 1.2 keeps listing a namespace whose
    # last item was deleted; embedmind lists namespaces that hold items.
    ours, _ = pair
    ours.put(("gone",), "k", {"v": 1})
    ours.delete(("gone",), "k")
    assert ours.list_namespaces() == []


def test_items_keep_no_copy_of_their_vectors_in_metadata() -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as engine:
        ours = EmbedmindStore(engine, index={"dims": 64, "fields": ["text", "tags[*]"]})
        ours.put(("docs",), "a", {"text": "green tea", "tags": ["drink", "leaf"]})
        memory = engine.get(item_id(ours._namespace(("docs",)), "a"))
        assert memory is not None
        # The field vectors live once, as the item's fragments in the engine.
        assert memory.metadata[RESERVED] == {"key": "a", "ttl": None, "paths": PATHS}
        assert engine.fragments.fragment_count == 3


PATHS = ["text", "tags[*].0", "tags[*].1"]


def test_an_item_written_with_packed_vectors_still_reads(tmp_path: Path) -> None:
    embedder = HashingEmbedder(64)
    with embedmind.Store.open(tmp_path / "old.mind", embedder=embedder) as engine:
        ours = EmbedmindStore(engine, index={"dims": 64, "fields": ["text"]})
        namespace, value = ours._namespace(("docs",)), {"text": "green tea"}
        # As the adapter wrote items before the engine scored fragments exactly:
        # a base64 float32 copy of each field vector in the reserved metadata.
        vector = np.asarray(embedder.embed_query("green tea"), dtype="<f4")
        packed = [base64.b64encode(vector.tobytes()).decode("ascii")]
        reserved = {"key": "a", "ttl": None, "paths": ["text"], "vectors": packed}
        memory_id = item_id(namespace, "a")
        engine.remember(
            "green tea",
            id=memory_id,
            namespace=namespace,
            metadata={**value, RESERVED: reserved},
            vector=vector.tolist(),
            agent="langgraph",
        )
        engine.fragments.put(memory_id, [((0, 1), vector.tolist())])
        item = ours.get(("docs",), "a")
        assert item is not None and item.value == value
        found = ours.search(("docs",), query="green tea")
        assert [(i.key, i.value) for i in found] == [("a", value)]
        assert found[0].score == pytest.approx(1.0, abs=1e-6)
        ours.put(("docs",), "a", value)  # rewritten: the copy goes
        again = engine.get(memory_id)
        assert again is not None and "vectors" not in again.metadata[RESERVED]


def test_a_langgraph_graph_remembers_across_runs() -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    class State(TypedDict):
        user: str
        said: str
        reply: str

    def respond(state: State, *, store: BaseStore) -> dict[str, str]:
        namespace = ("memories", state["user"])
        if state["said"].startswith("remember "):
            store.put(
                namespace,
                str(len(store.search(namespace)) + 1),
                {"fact": state["said"][9:]},
                index=["fact"],
            )
            return {"reply": "noted"}
        found = store.search(namespace, query=state["said"], limit=1)
        return {"reply": found[0].value["fact"] if found else "I don't know"}

    builder = StateGraph(State)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as store:
        graph = builder.compile(store=EmbedmindStore(store))
        graph.invoke({"user": "ana", "said": "remember my cat is called Miso", "reply": ""})
        graph.invoke({"user": "ana", "said": "remember I live in Porto", "reply": ""})
        out = graph.invoke({"user": "ana", "said": "what is my cat called?", "reply": ""})
        assert out["reply"] == "my cat is called Miso"
        other = graph.invoke({"user": "bo", "said": "what is my cat called?", "reply": ""})
        assert other["reply"] == "I don't know"
