"""Memories as LangChain documents: metadata equal to what went in, extras under one key.

A vector store writes document ``d`` of namespace ``n`` as memory ``n*d``
(:func:`memory_id`), and a document read back carries ``d`` again
(:func:`document_id`). The engine's ids are unique across the file, so a raw
document id would let one namespace's writes collide with (and, by the error,
confirm) another's; ``*`` never occurs in a namespace, so ``n*d`` names one
(namespace, id) pair only. A memory whose id lacks its namespace's prefix
(written through the engine, or by an adapter older than this scoping) keeps
its own id as the document id.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from embedmind import Hit, InvalidInputError, Memory
from embedmind.ids import MAX_ID_CHARS, validate_id

RESERVED = "embedmind"
"""The metadata key under which retrievers put score, ranks, namespace and timestamps."""


SEPARATOR = "*"
"""Between a namespace and a document id in a memory id (namespaces never hold it)."""


def memory_id(namespace: str, document_id: object, field: str = "ids") -> str:
    """The memory id of document ``document_id`` written to ``namespace`` (in NFC).

    Raises:
        InvalidInputError: When the document id is not a valid id, or is too
            long to fit the engine's ids once prefixed with the namespace.
    """
    text = validate_id(document_id, field)
    room = MAX_ID_CHARS - len(namespace) - len(SEPARATOR)
    if len(text) > room:
        raise InvalidInputError(
            field,
            f"{len(text)} characters; a document id in namespace {namespace!r} has at most "
            f"{room} characters (ids are stored prefixed with their namespace): use a "
            "shorter id, or a shorter namespace",
        )
    return f"{namespace}{SEPARATOR}{text}"


def document_id(memory: Memory) -> str:
    """The id a document written as ``memory`` was given (see :func:`memory_id`)."""
    prefix = memory.namespace + SEPARATOR
    given = memory.id[len(prefix) :] if memory.id.startswith(prefix) else ""
    return given if given.strip() else memory.id


def to_document(memory: Memory) -> Document:
    """A document whose metadata is exactly the memory's metadata, under its document id."""
    return Document(
        page_content=memory.content, metadata=dict(memory.metadata), id=document_id(memory)
    )


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
        page_content=memory.content,
        metadata={**memory.metadata, RESERVED: details},
        id=document_id(memory),
    )
