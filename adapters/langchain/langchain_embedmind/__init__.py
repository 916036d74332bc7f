"""LangChain and LangGraph integration for embedmind.

Names are imported lazily, so loading the embedmind entry point
(:mod:`langchain_embedmind.plugin`) never imports LangChain.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EmbedmindChatMessageHistory": "langchain_embedmind.chat_history",
    "EmbedmindEmbeddings": "langchain_embedmind.embeddings",
    "EmbedmindRetriever": "langchain_embedmind.retrievers",
    "EmbedmindStore": "langchain_embedmind.stores",
    "EmbedmindVectorStore": "langchain_embedmind.vectorstores",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_embedmind' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
