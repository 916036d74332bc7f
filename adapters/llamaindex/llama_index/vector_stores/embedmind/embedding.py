"""``EmbedmindEmbedding``: the engine's default model as a LlamaIndex embedding."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from embedmind.plugins import resolve_embedder


class EmbedmindEmbedding(BaseEmbedding):
    """Use as ``Settings.embed_model`` so the index and the store share one model."""

    embedder_name: str = "default"
    _embedder: Any = PrivateAttr()

    def __init__(self, embedder_name: str = "default", **kwargs: Any) -> None:
        super().__init__(embedder_name=embedder_name, model_name=embedder_name, **kwargs)  # type: ignore[call-arg]
        self._embedder = resolve_embedder(embedder_name)

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises."""
        return "EmbedmindEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_documents([text])[0]]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed_documents(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)
