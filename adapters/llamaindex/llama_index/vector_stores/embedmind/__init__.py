"""LlamaIndex vector store backed by embedmind.

Names load lazily, so the embedmind entry point (``.plugin``) imports no LlamaIndex.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EmbedmindVectorStore": "llama_index.vector_stores.embedmind.base",
    "EmbedmindEmbedding": "llama_index.vector_stores.embedmind.embedding",
    "to_where": "llama_index.vector_stores.embedmind.filters",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
