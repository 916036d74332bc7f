"""The values the backend protocol (:mod:`embedmind.backend.protocol`) passes: frozen, plain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from embedmind.errors import StorageError

Synchronous = Literal["FULL", "NORMAL"]
"""The durability levels a store opens with (``synchronous=`` of :meth:`embedmind.Store.open`)."""

EXPORT_COLUMNS = (
    "key", "id", "namespace", "content", "metadata", "tags", "tier", "level", "agent",
    "session_id", "created_at", "updated_at", "valid_from", "valid_to", "expires_at",
    "superseded_by", "confidence", "access_count", "last_accessed_at", "fingerprint",
    "contradicted_by", "prior_confidence",
)  # fmt: skip
"""The fields of each row ``Records.export_page`` returns (an export line's memory fields)."""

CHECKPOINT_TIMEOUT = 5.0
"""Default bound, in seconds, of the wait of a truncating checkpoint (redact, vacuum)."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend offers beyond the protocol, declared by the backend itself.

    Attributes:
        name: The backend's registered name (``"sqlite"``).
        secure_delete: Deleted content is overwritten in place (redaction and
            ``delete`` leave no bytes behind in the store's files).
        wal_checkpoint: :meth:`Backend.checkpoint` folds a write-ahead log back
            into the main file (else it is a no-op returning ``None``).
        vector_cache: The backend keeps a per-process vector index (HNSW) that
            is a cache of the stored vectors: it is synced before a search and
            saved through :meth:`WriteSession.save_caches`.
        file_backed: The store is files on this machine (``path`` is a file,
            a closed store's files are a backup, ``file_bytes`` is meaningful).
        vacuum: :meth:`Backend.vacuum` reclaims space.
        multi_process: Several processes may open the store at once.
    """

    name: str
    secure_delete: bool = False
    wal_checkpoint: bool = False
    vector_cache: bool = False
    file_backed: bool = False
    vacuum: bool = False
    multi_process: bool = True


class Space(Enum):
    """A family of vectors: the memories' own (one per chunk) or the fragment index's."""

    MEMORY = "memory"
    FRAGMENTS = "fragments"


@dataclass(frozen=True)
class RowRef:
    """What a write needs to know about the row that holds an id."""

    key: int
    namespace: str
    content: str
    created_at: int
    forgotten: bool
    superseded_by: str | None = None


@dataclass(frozen=True)
class Identity:
    """A row named by what events and metrics report of it."""

    id: str
    namespace: str
    tier: str


@dataclass(frozen=True)
class Edge:
    """One relation seen from a memory."""

    other: int
    kind: str
    outgoing: bool


@dataclass(frozen=True)
class VectorHit:
    """One vector found by :meth:`Channels.vector_top`: its own key, its memory's, its cosine."""

    vec_key: int
    key: int
    cosine: float


@dataclass(frozen=True)
class Link:
    """A namespace link: ``src`` may read ``dst`` (its ``tiers``, or all when ``None``)."""

    src: str
    dst: str
    tiers: tuple[str, ...] | None
    note: str
    created_at: int


@dataclass(frozen=True)
class OpenOptions:
    """What :meth:`embedmind.Store.open` passes to a backend factory.

    Attributes:
        location: The path or URL as given (a path already made absolute).
        synchronous: ``"FULL"`` or ``"NORMAL"`` durability.
        busy_timeout: Seconds a writer waits for the lock.
    """

    location: str
    synchronous: str = "FULL"
    busy_timeout: float = 10.0


def check_blobs(blobs: Sequence[bytes], dims: int) -> None:
    """Check that every stored vector blob holds exactly ``dims`` float32 values.

    Raises:
        StorageError: When one does not (a damaged row: the engine never writes one),
            instead of numpy's ValueError from a reshape far away.
    """
    if any(len(blob) != 4 * dims for blob in blobs):
        raise StorageError(f"a stored vector is not {dims} float32 values: the store is damaged")


KEPT_WHEN_SUPERSEDED = ("valid_from", "valid_to")
"""Columns an upsert leaves as they are on a superseded row.

Its successor names it and its window was closed at the successor's start:
clearing them would make a second current version of one memory, which no
lineage shows (the fork a supersede refuses), and the upsert's own window
(from now) would begin after the closed one ends.
"""
