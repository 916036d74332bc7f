"""The memory model: what the API accepts and returns.

Results are frozen dataclasses. Scores are always higher-is-better; per-channel
ranks and raw values travel with each hit so a notebook can show why it ranked
where it did.
"""

from __future__ import annotations

import datetime as _dt
import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

JSONValue = Any
"""A JSON value: ``None``, bool, int, float, str, list of JSON values, or dict of them."""

Metadata = Mapping[str, JSONValue]
"""Memory metadata: a JSON object, stored exactly as given."""

Where = Mapping[str, Any]
"""A filter in the ``where`` language (see ``docs/reference/where.md``)."""

NamespaceScope = str | Sequence[str] | None
"""Which namespaces a read covers: ``"a/b"`` exactly, ``"a/b/*"`` for the subtree
(``a/b`` and everything below it), a list of those, or ``None`` for all."""


class Tier(str, enum.Enum):
    """The memory tiers of the Go seed: how long-lived a memory is meant to be."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class Level(str, enum.Enum):
    """How a memory came to be: stated explicitly or deduced from others."""

    EXPLICIT = "explicit"
    DEDUCED = "deduced"


class Mode(str, enum.Enum):
    """Which channels :meth:`embedmind.Store.recall` uses."""

    HYBRID = "hybrid"
    VECTOR = "vector"
    TEXT = "text"


@dataclass(frozen=True)
class Memory:
    """One stored memory, as returned by the API.

    Attributes:
        id: Caller-given id, or a ULID (time-ordered).
        namespace: ``/``-separated namespace.
        content: The text.
        metadata: JSON object, equal to what was given.
        tags: Tags, deduplicated, in the order given.
        tier: The memory's tier.
        level: Explicit or deduced.
        agent: Who wrote it (``""`` = unknown).
        session_id: The writing session, if any.
        created_at: When it was created (overridable for backfills).
        updated_at: Last in-place change.
        valid_from: Start of validity (defaults to ``created_at``).
        valid_to: End of validity, or ``None`` for open.
        expires_at: TTL expiry, or ``None``.
        superseded_by: Id of the memory that replaced this one, if any.
        confidence: Confidence in [0, 1].
        access_count: How often it was reinforced.
        last_accessed_at: Last reinforcement, if any.
        fingerprint: Hash of the normalised content (exact-restatement dedup).
        forgotten: ``True`` only for tombstones listed with ``include_forgotten``.
    """

    id: str
    namespace: str
    content: str
    metadata: dict[str, JSONValue]
    tags: tuple[str, ...]
    tier: Tier
    level: Level
    agent: str
    session_id: str | None
    created_at: _dt.datetime
    updated_at: _dt.datetime
    valid_from: _dt.datetime
    valid_to: _dt.datetime | None
    expires_at: _dt.datetime | None
    superseded_by: str | None
    confidence: float
    access_count: int
    last_accessed_at: _dt.datetime | None
    fingerprint: str
    forgotten: bool = False


@dataclass(frozen=True)
class Draft:
    """A memory to be written by :meth:`embedmind.Store.remember_many`.

    The fields mirror the keyword arguments of :meth:`embedmind.Store.remember`.
    """

    content: str
    id: str | None = None
    namespace: str = "default"
    metadata: Metadata | None = None
    tags: Sequence[str] = ()
    tier: Tier | str = Tier.SEMANTIC
    level: Level | str = Level.EXPLICIT
    agent: str = ""
    session_id: str | None = None
    created_at: _dt.datetime | None = None
    valid_from: _dt.datetime | None = None
    valid_to: _dt.datetime | None = None
    ttl: _dt.timedelta | None = None
    expires_at: _dt.datetime | None = None
    confidence: float = 1.0
    vector: Sequence[float] | None = None
    entities: Sequence[str] = ()
    relations: Sequence[tuple[str, str]] = ()
    supersedes: Sequence[str] = ()


@dataclass(frozen=True)
class ChannelScore:
    """One channel's view of a hit.

    Attributes:
        rank: 1-based rank within the channel.
        raw: The channel's raw score (BM25 for ``text``, cosine for ``vector``).
        via_context: On the ``text`` channel, with ``explain=True``: the query
            terms the memory matched only through its dialog neighbours (session
            context), not through its own words. Empty otherwise.
        via_widening: On the ``text`` channel of ``recall(..., widen=True)``:
            the key term whose sub-query brought the memory into the lexical
            list (it was not among the primary query's first candidates; its
            ``raw`` is still the primary query's score). Empty otherwise.
    """

    rank: int
    raw: float
    via_context: tuple[str, ...] = ()
    via_widening: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """One recall result.

    Attributes:
        memory: The recalled memory.
        score: The estimated probability (0-1) that the hit is relevant, in
            every mode (:mod:`embedmind.evidence`); higher is better. Each
            channel's raw score (BM25, cosine) is in ``channels``.
        rank: 1-based position in the result.
        channels: Per-channel rank and raw score, keyed by channel name.
    """

    memory: Memory
    score: float
    rank: int
    channels: Mapping[str, ChannelScore] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The memory's id."""
        return self.memory.id

    @property
    def content(self) -> str:
        """The memory's content."""
        return self.memory.content


@dataclass(frozen=True)
class Recall(Sequence[Hit]):
    """The result of :meth:`embedmind.Store.recall`: a sequence of hits, best first.

    Attributes:
        hits: The hits.
        mode: The mode that was asked for.
        channels: The channels that actually ran.
        degraded: Human-readable notes when a channel was unavailable.
        timings: Per-phase wall times in milliseconds (only with ``explain=True``).
    """

    hits: tuple[Hit, ...]
    mode: Mode
    channels: tuple[str, ...]
    degraded: tuple[str, ...] = ()
    timings: Mapping[str, float] | None = None

    @overload
    def __getitem__(self, index: int) -> Hit: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Hit]: ...

    def __getitem__(self, index: int | slice) -> Hit | Sequence[Hit]:
        return self.hits[index]

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    @property
    def ids(self) -> list[str]:
        """The ids of the hits, best first."""
        return [hit.memory.id for hit in self.hits]


@dataclass(frozen=True)
class AgentStats:
    """One agent's share of the live memories.

    Attributes:
        live: Live memories written by the agent.
        sessions: Distinct sessions the agent wrote under.
    """

    live: int
    sessions: tuple[str, ...]


@dataclass(frozen=True)
class Stats:
    """What :meth:`embedmind.Store.stats` reports.

    Attributes:
        live: Memories that reads can see (expired ones included).
        forgotten: Tombstones awaiting vacuum.
        expired: Live memories past their TTL at ``now``.
        superseded: Live memories replaced by a newer version.
        by_agent: Live memories per agent, with their sessions.
        by_namespace: Live memories per namespace.
        by_tier: Live memories per tier.
        lexical_documents: Documents in the BM25 index.
        lexical_terms: Terms in the BM25 dictionary.
        vectors: Stored vectors (a long memory has one per chunk).
        graph_entities: Distinct entity names.
        graph_relations: Stored relations (each counted once).
        embedder: The embedding model recorded in the store, if any.
        file_bytes: Size of the database file plus its WAL (PostgreSQL: of the
            store's tables on the server, with their indexes and TOAST).
        schema_version: The store's schema version.
        missing_vectors: Live memories without a vector, in a store that has
            an embedding model: written while it was open with
            ``embedder=None`` (or before it had a model), vector search cannot
            find them; :func:`embedmind.reembed` with ``missing=True`` fills
            them. Always 0 in a store that never had a model.
        session_context: Whether the BM25 postings carry session context (a
            memory with a ``session_id`` also indexes its dialog neighbours'
            words); see ``Store.open(session_context=)``.
    """

    live: int
    forgotten: int
    expired: int
    superseded: int
    by_agent: Mapping[str, AgentStats]
    by_namespace: Mapping[str, int]
    by_tier: Mapping[str, int]
    lexical_documents: int
    lexical_terms: int
    vectors: int
    graph_entities: int
    graph_relations: int
    embedder: str | None
    file_bytes: int
    schema_version: int
    missing_vectors: int = 0
    session_context: bool = False


@dataclass(frozen=True)
class SimilarMemory:
    """An existing memory close to one just written (a write-time hint).

    Attributes:
        id: The existing memory's id.
        content: Its content, cut to 160 characters (an ellipsis marks a cut).
        score: Cosine similarity to the new content.
        created_at: When the existing memory was written.
    """

    id: str
    content: str
    score: float
    created_at: _dt.datetime


@dataclass(frozen=True)
class Remembered:
    """What :meth:`embedmind.Store.remember_detailed` returns.

    Attributes:
        memory: The stored memory (storing always happens).
        similar: Near duplicates: same namespace, live, not superseded,
            cosine >= 0.80, best first, at most 5.
    """

    memory: Memory
    similar: tuple[SimilarMemory, ...]


@dataclass(frozen=True)
class Related:
    """A memory connected to another by a typed relation.

    Attributes:
        memory: The memory at the other end.
        kind: The relation kind (``"supersedes"``, ``"refines"``, ...).
        outgoing: ``True`` when the queried memory points at this one.
        depth: Hops from the queried memory (1 for direct neighbours).
    """

    memory: Memory
    kind: str
    outgoing: bool
    depth: int = 1


@dataclass(frozen=True)
class Lineage:
    """A supersession chain around one memory.

    Attributes:
        older: The versions it replaced, nearest first (each step back).
        newer: The versions that replaced it, nearest first (each step forward).
    """

    older: tuple[Memory, ...]
    newer: tuple[Memory, ...]


@dataclass(frozen=True)
class NamespaceActivity:
    """One namespace holding live memories.

    Attributes:
        namespace: The namespace.
        live: Live memories in it.
        last_write: The newest ``updated_at`` among them.
    """

    namespace: str
    live: int
    last_write: _dt.datetime


@dataclass(frozen=True)
class NamespaceLink:
    """A grant: reads of ``src`` with ``follow_links`` also see ``dst``.

    Attributes:
        src: The namespace that reads.
        dst: The namespace it may read.
        tiers: Tiers of ``dst`` it may read (``None``: the durable tiers
            semantic and procedural).
        note: Free text.
        created_at: When the link was made.
    """

    src: str
    dst: str
    tiers: tuple[Tier, ...] | None
    note: str
    created_at: _dt.datetime
