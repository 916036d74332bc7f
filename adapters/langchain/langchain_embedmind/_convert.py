"""Memories as LangChain documents: metadata equal to what went in, extras under one key."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from embedmind import Hit, Memory

RESERVED = "embedmind"
"""The metadata key under which retrievers put score, ranks, namespace and timestamps."""


def to_document(memory: Memory) -> Document:
    """A document whose metadata is exactly the memory's metadata."""
    return Document(page_content=memory.content, metadata=dict(memory.metadata), id=memory.id)


def hit_document(hit: Hit) -> Document:
    """A retriever document: the memory's metadata plus recall details under ``embedmind``."""
    memory = hit.memory
    details: dict[str, Any] = {
        "score": hit.score,
        "rank": hit.rank,
        "channels": {name: {"rank": c.rank, "raw": c.raw} for name, c in hit.channels.items()},
        "namespace": memory.namespace,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
    }
    return Document(
        page_content=memory.content, metadata={**memory.metadata, RESERVED: details}, id=memory.id
    )
