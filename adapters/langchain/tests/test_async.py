"""The adapters' async methods work, and run off the event loop, on both backends.

The engine's API is synchronous. LangChain's defaults run a vector store's and
a retriever's sync methods in an executor; the LangGraph store awaits the
embeddings and runs storage in a worker thread (``asyncio.to_thread``). Each
test holds the sync method that does the work until a coroutine scheduled
beside the call has run: were it run on the loop, that coroutine could not run
and the method would give up after a timeout.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_embedmind import EmbedmindRetriever, EmbedmindStore, EmbedmindVectorStore

import embedmind
from embedmind.embedders.hashing import HashingEmbedder


def _held(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> threading.Event:
    loop_ran = threading.Event()
    original = getattr(cls, name)

    def held(self: Any, *args: Any, **kwargs: Any) -> Any:
        assert loop_ran.wait(10), f"{cls.__name__}.{name} ran on the event loop and blocked it"
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, held)
    return loop_ran


async def _beside(call: Awaitable[Any], loop_ran: threading.Event) -> Any:
    async def run() -> None:
        loop_ran.set()

    out, _ = await asyncio.gather(call, run())
    return out


@pytest.fixture
def vectorstore() -> EmbedmindVectorStore:
    vs = EmbedmindVectorStore(embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)))
    vs.add_texts(["the sky is blue", "grass is green"], ids=["sky", "grass"])
    return vs


VECTOR_CASES: list[tuple[str, Callable[[EmbedmindVectorStore], Awaitable[Any]], Any]] = [
    ("add_documents", lambda v: v.aadd_documents([Document("roses are red")], ids=["rose"]),
     ["rose"]),
    ("similarity_search", lambda v: v.asimilarity_search("blue sky", k=1), "sky"),
]  # fmt: skip


@pytest.mark.parametrize(("twin", "call", "expected"), VECTOR_CASES, ids=["aadd", "asearch"])
async def test_vector_store_async_methods_run_in_an_executor(
    vectorstore: EmbedmindVectorStore,
    monkeypatch: pytest.MonkeyPatch,
    twin: str,
    call: Callable[[EmbedmindVectorStore], Awaitable[Any]],
    expected: Any,
) -> None:
    out = await _beside(call(vectorstore), _held(monkeypatch, EmbedmindVectorStore, twin))
    got = out if twin == "add_documents" else out[0].id
    assert got == expected
    if twin == "add_documents":
        monkeypatch.undo()
        assert [d.page_content for d in vectorstore.get_by_ids(["rose"])] == ["roses are red"]


async def test_the_retriever_ainvoke_runs_in_an_executor(
    vectorstore: EmbedmindVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever = EmbedmindRetriever(vectorstore.store, k=1)
    loop_ran = _held(monkeypatch, EmbedmindRetriever, "_get_relevant_documents")
    docs = await _beside(retriever.ainvoke("green grass"), loop_ran)
    assert [d.page_content for d in docs] == ["grass is green"]


async def test_langgraph_store_async_methods_run_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as engine:
        store = EmbedmindStore(engine)
        for step in ("aput", "aget", "asearch", "abatch"):
            loop_ran = _held(monkeypatch, EmbedmindStore, "_run")
            if step == "aput":
                await _beside(store.aput(("u", "a"), "k", {"text": "tea in assam"}), loop_ran)
            elif step == "aget":
                item = await _beside(store.aget(("u", "a"), "k"), loop_ran)
                assert item is not None and item.value == {"text": "tea in assam"}
            elif step == "asearch":
                found = await _beside(store.asearch(("u",), query="assam tea"), loop_ran)
                assert [i.key for i in found] == ["k"]
            else:
                from langgraph.store.base import GetOp

                [item] = await _beside(store.abatch([GetOp(("u", "a"), "k")]), loop_ran)
                assert item is not None and item.key == "k"
            monkeypatch.undo()
