"""Write events: small frozen records dispatched to ``records_committed`` after commit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryWritten:
    """A memory was stored (new, or an upsert)."""

    id: str
    namespace: str
    tier: str


@dataclass(frozen=True)
class MemoryUpdated:
    """A live memory changed in place without new content.

    Moved, retiered, reinforced, restored, contradicted, its confidence set, or
    closed by a supersede; ``namespace`` and ``tier`` are its values after the change.
    """

    id: str
    namespace: str
    tier: str


@dataclass(frozen=True)
class MemoryForgotten:
    """A memory was tombstoned."""

    id: str


@dataclass(frozen=True)
class MemoryDeleted:
    """A memory was removed at once (delete, sweep, eviction or namespace deletion)."""

    id: str


@dataclass(frozen=True)
class MemoryRedacted:
    """A memory's content was replaced by redaction."""

    id: str
