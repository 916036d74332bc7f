"""The vector store's async methods work, and run off the event loop, on both backends.

LlamaIndex's default async methods call the sync ones on the event loop; the
store's run them in a worker thread. Each test holds the sync twin until a
coroutine scheduled beside the call has run: were the call run on the loop,
that coroutine could not run and the twin would give up after a timeout.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.vector_stores.embedmind import EmbedmindVectorStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

EMBED = HashingEmbedder(32)


def _node(i: int, text: str) -> TextNode:
    node = TextNode(text=text, id_=f"n{i}", metadata={"i": i})
    node.embedding = EMBED.embed_documents([text])[0].tolist()
    return node


NODES = [_node(0, "tea grows in assam"), _node(1, "coffee grows in brazil")]


@pytest.fixture
def vs() -> EmbedmindVectorStore:
    store = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=EMBED))
    store.add(NODES)
    return store


def _query(text: str) -> VectorStoreQuery:
    return VectorStoreQuery(
        query_embedding=EMBED.embed_documents([text])[0].tolist(), similarity_top_k=1
    )


CASES: list[tuple[str, Callable[[EmbedmindVectorStore], Awaitable[Any]],
                  Callable[[EmbedmindVectorStore, Any], None]]] = [
    ("add", lambda v: v.async_add([_node(2, "rice grows in java")]),
     lambda v, out: None if out == ["n2"] else _fail(out)),
    ("query", lambda v: v.aquery(_query("tea assam")),
     lambda v, out: None if out.ids == ["n0"] else _fail(out.ids)),
    ("get_nodes", lambda v: v.aget_nodes(["n1"]),
     lambda v, out: None if [n.node_id for n in out] == ["n1"] else _fail(out)),
    ("delete_nodes", lambda v: v.adelete_nodes(
        filters=MetadataFilters(filters=[MetadataFilter(key="i", value=0)])),
     lambda v, out: None if [n.node_id for n in v.get_nodes()] == ["n1"] else _fail(out)),
    ("clear", lambda v: v.aclear(),
     lambda v, out: None if v.get_nodes() == [] else _fail(v.get_nodes())),
]  # fmt: skip


def _fail(got: Any) -> None:
    raise AssertionError(f"unexpected result {got!r}")


@pytest.mark.parametrize(("twin", "call", "check"), CASES, ids=[c[0] for c in CASES])
async def test_an_async_method_runs_in_a_thread_and_does_what_its_twin_does(
    vs: EmbedmindVectorStore,
    monkeypatch: pytest.MonkeyPatch,
    twin: str,
    call: Callable[[EmbedmindVectorStore], Awaitable[Any]],
    check: Callable[[EmbedmindVectorStore, Any], None],
) -> None:
    loop_ran = threading.Event()
    original = getattr(EmbedmindVectorStore, twin)

    def held(self: EmbedmindVectorStore, *args: Any, **kwargs: Any) -> Any:
        assert loop_ran.wait(10), f"async {twin} ran on the event loop and blocked it"
        return original(self, *args, **kwargs)

    monkeypatch.setattr(EmbedmindVectorStore, twin, held)

    async def beside() -> None:
        loop_ran.set()

    out, _ = await asyncio.gather(call(vs), beside())
    monkeypatch.undo()
    check(vs, out)


async def test_adelete_removes_one_source_document(vs: EmbedmindVectorStore) -> None:
    source = TextNode(text="tea from darjeeling", id_="n9")
    source.embedding = EMBED.embed_documents([source.text])[0].tolist()
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    source.relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-tea")}
    await vs.async_add([source])
    await vs.adelete("doc-tea")
    assert sorted(n.node_id for n in await vs.aget_nodes()) == ["n0", "n1"]
