"""LangChain's own conformance suites, run unmodified against the adapter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.vectorstores import VectorStore
from langchain_embedmind import EmbedmindRetriever, EmbedmindVectorStore
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

import embedmind
from embedmind.embedders.hashing import HashingEmbedder


class TestEmbedmindVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:  # type: ignore[override]
        store = EmbedmindVectorStore(embedding=self.get_embeddings())
        yield store
        store.store.close()


def _store_with_documents() -> embedmind.Store:
    store = embedmind.Store.open(":memory:", embedder=HashingEmbedder(64))
    store.remember_many([f"note {i} about gardening and tomatoes" for i in range(10)])
    return store


class TestEmbedmindRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[EmbedmindRetriever]:
        return EmbedmindRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": _store_with_documents()}

    @property
    def retriever_query_example(self) -> str:
        return "tomatoes in the garden"
