"""``EmbedmindEmbeddings``: the engine's default model as LangChain embeddings."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from embedmind.plugins import resolve_embedder


class EmbedmindEmbeddings(Embeddings):
    """The embedded all-MiniLM-L6-v2 (or any registered embedder) for LangChain.

    Share one model between a chain and a store:
    ``Store.open(path)`` uses the same default model.

    Args:
        name: A registered embedder name (default: the embedded model).
    """

    def __init__(self, name: str = "default") -> None:
        self._embedder: Any = resolve_embedder(name)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return [list(map(float, row)) for row in self._embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return list(map(float, self._embedder.embed_query(text)))
