"""The :class:`Store` facade: the only public engine API.

It validates arguments, opens transactions and composes the parts (records,
lexical index, recall); it holds no SQL and no scoring math.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from embedmind import drafts, recall, writes
from embedmind.embedders.adapt import DEFAULT, identity, normalized, resolve
from embedmind.embedders.protocol import Embedder
from embedmind.errors import EmbedderMismatchError, InvalidInputError, StorageError
from embedmind.events import MemoryDeleted, MemoryForgotten, MemoryRedacted, MemoryWritten
from embedmind.fragment_writer import fragment_on_write
from embedmind.fragments import Fragments
from embedmind.ids import validate_id
from embedmind.lexical.index import LexicalIndex
from embedmind.model import (
    AgentStats,
    Draft,
    Level,
    Memory,
    Metadata,
    Mode,
    NamespaceScope,
    Recall,
    Remembered,
    SimilarMemory,
    Stats,
    Tier,
    Where,
)
from embedmind.plugins import embedder_factory, notify_committed, resolve_embedder
from embedmind.plugins import rerank as plugin_rerank
from embedmind.policies import EvictionPolicy, FragmentPolicy
from embedmind.storage import graph, lifecycle, records
from embedmind.storage import vectors as vector_rows
from embedmind.storage.connection import Synchronous
from embedmind.storage.database import Database, normalize_path
from embedmind.storage.selection import Selection
from embedmind.store_graph import GraphMethods
from embedmind.store_lifecycle import LifecycleMethods, emit
from embedmind.store_maintenance import MaintenanceMethods
from embedmind.store_transfer import TransferMethods
from embedmind.timestamps import resolve_now, to_micros
from embedmind.vectors import search
from embedmind.vectors.embedding import Embedded, embed_contents
from embedmind.vectors.hnsw import VectorIndex

logger = logging.getLogger(__name__)

NEAR_DUP_THRESHOLD = 0.80
"""Cosine at or above which an existing memory is reported as a near duplicate.

The engine seed measured it: unrelated pairs sit at p99 = 0.639, restatements
of one fact at p5 = 0.840; at 0.80 98.5 % of duplicates are caught and 0.10 %
of unrelated pairs flagged. The hint informs and never blocks, so a rare
false alarm is the cheap side of the trade."""
NEAR_DUP_LIMIT = 5
NEAR_DUP_SNIPPET = 160
SAVE_INDEX_AFTER = 20_000
"""Vector changes after which a write also saves the index file (else at close)."""
MAX_K = 10_000
MAX_BATCH_SIZE = 10_000
MAX_DRAFTS = 10_000_000
_PAGE = 256


class Store(GraphMethods, LifecycleMethods, MaintenanceMethods, TransferMethods):
    """An embedmind store: one SQLite file of memories and their indexes.

    Open with :meth:`Store.open`; use as a context manager to close it.

    Example:
        >>> store = Store.open(":memory:", embedder=None)
        >>> _ = store.remember("Alice prefers green tea", namespace="user/alice")
        >>> [hit.content for hit in store.recall("what tea does alice like?", mode="text")]
        ['Alice prefers green tea']
        >>> store.close()
    """

    def __init__(
        self,
        database: Database,
        embedder: Embedder | None,
        metrics: Any = None,
        fragment_policy: FragmentPolicy | None = None,
        eviction: EvictionPolicy | None = None,
    ) -> None:
        self._db = database
        self._lexical = LexicalIndex()
        self._embedder = embedder
        self._metrics = metrics
        self._vectors: VectorIndex | None = None
        if embedder is not None:
            file_path = None if database.path == ":memory:" else database.path + "-vectors"
            self._vectors = VectorIndex(file_path, embedder.dims)
        self.fragments = Fragments(self, None if embedder is None else embedder.dims)
        """The fragment index (see :class:`embedmind.fragments.Fragments`)."""
        self._fragment_policy = fragment_policy
        self._chunker = None if fragment_policy is None else fragment_policy.resolve()
        self._eviction = eviction

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this store was opened with (``None``: text only)."""
        return self._embedder

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        embedder: object = DEFAULT,
        synchronous: Synchronous = "FULL",
        busy_timeout: float = 10.0,
        metrics: Any = None,
        fragment_policy: FragmentPolicy | None = None,
        eviction: EvictionPolicy | None = None,
    ) -> Store:
        """Open (creating if missing) the store at ``path``; ``":memory:"`` is a throwaway.

        Args:
            path: The store file, e.g. ``"memories.mind"``, or ``":memory:"``.
            embedder: By default the model the store was created with when it is
                a registered embedder, else the embedded all-MiniLM-L6-v2; a
                registered name; any object with
                ``embed_documents``/``embed_query`` (embedmind's own, a plain
                class, a LangChain ``Embeddings``) or a LlamaIndex embedding;
                ``None`` for a text-only store.
            synchronous: ``"FULL"`` (default): a returned write survives power
                loss. ``"NORMAL"``: faster, and a returned write survives a process
                crash but may be lost on power loss.
            busy_timeout: Seconds a writer waits for the lock before
                :class:`~embedmind.errors.StoreBusyError`.
            metrics: Optional observer; any of its methods ``upsert(op, tier)``,
                ``delete()``, ``soft_delete()``, ``sweep_expired(tier)``,
                ``dedup_hit()`` and ``active_by_tier(tier, n)`` is called after
                the matching change commits.
            fragment_policy: Chunk and embed every written memory in its scope
                into the fragment index, best effort (failures are logged with
                the record id and never fail the write).
            eviction: Keep at most ``max_records`` memories per namespace (and
                tier) in its scope, evicting the oldest in the same transaction.

        Returns:
            The open store.

        Raises:
            InvalidInputError: When an argument is invalid.
            SchemaVersionError: When the file was written by a newer embedmind.
            EmbedderMismatchError: When the store's vectors come from another model.
            StorageError: When the file cannot be opened.
        """
        database = Database(
            normalize_path(path), synchronous=synchronous, busy_timeout=busy_timeout
        )
        try:
            if embedder == DEFAULT:
                embedder = _recorded_model(database) or DEFAULT
            resolved = resolve(resolve_embedder(embedder))
        except BaseException:
            database.close()
            raise
        try:
            if resolved is not None:
                _check_identity(database, resolved)
        except BaseException:
            database.close()
            raise
        if fragment_policy is not None and resolved is None:
            database.close()
            raise InvalidInputError("fragment_policy", "fragments need an embedder")
        try:
            return cls(database, resolved, metrics, fragment_policy, eviction)
        except BaseException:
            database.close()
            raise

    @property
    def path(self) -> str:
        """The store file's absolute path, or ``":memory:"``."""
        return self._db.path

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        return self._db.schema_version

    # -- writes ----------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        id: str | None = None,
        namespace: str = "default",
        metadata: Metadata | None = None,
        tags: Sequence[str] = (),
        tier: Tier | str = Tier.SEMANTIC,
        level: Level | str = Level.EXPLICIT,
        agent: str = "",
        session_id: str | None = None,
        created_at: _dt.datetime | None = None,
        valid_from: _dt.datetime | None = None,
        valid_to: _dt.datetime | None = None,
        ttl: _dt.timedelta | None = None,
        expires_at: _dt.datetime | None = None,
        confidence: float = 1.0,
        vector: Sequence[float] | None = None,
        entities: Sequence[str] = (),
        relations: Sequence[tuple[str, str]] = (),
        supersedes: Sequence[str] = (),
        dedup: str | None = None,
        now: _dt.datetime | None = None,
    ) -> Memory:
        """Store one memory durably and return it.

        Writing an id that exists in the same namespace replaces that memory
        (keeping its ``created_at``); an id that exists in another namespace is
        a :class:`~embedmind.errors.ConflictError`.

        Args:
            content: The text to remember (at most 1 MiB of UTF-8).
            id: Your id for it; a ULID is minted when omitted.
            namespace: ``/``-separated home, e.g. ``"user/alice"``.
            metadata: A JSON object, stored exactly as given.
            tags: Tags to filter on (AND).
            tier: ``working``, ``episodic``, ``semantic`` or ``procedural``.
            level: ``explicit`` or ``deduced``.
            agent: Who is writing (provenance).
            session_id: The writing session (provenance).
            created_at: Override the creation time (backfills, imports).
            valid_from: Start of validity (default: ``created_at``).
            valid_to: End of validity (default: open).
            ttl: Time to live; the memory expires ``ttl`` after ``now``.
            expires_at: Absolute expiry (instead of ``ttl``).
            confidence: In [0, 1].
            vector: Its embedding, when you computed it already (validated and
                normalised, not re-embedded).
            entities: Explicit entity names (1-128 bytes each) to file it under.
            relations: ``(kind, target id)`` edges to existing, live memories.
            supersedes: Ids of live memories in the same namespace this one
                replaces: they leave recall but stay readable as history.
            dedup: ``"exact"`` returns the live memory with the same normalised
                content (same namespace and tier) instead of writing a twin.
            now: The write instant (default: the clock).

        Returns:
            The stored memory (or, with ``dedup="exact"``, the existing one).

        Raises:
            InvalidInputError: When an argument is invalid; nothing is written.
            NotFoundError: When a relation or supersede target is missing or forgotten.
            ConflictError: When ``id`` exists in another namespace.
            StoreBusyError: When another writer holds the lock too long.
        """
        draft = Draft(
            content, id, namespace, metadata, tags, tier, level, agent, session_id,
            created_at, valid_from, valid_to, ttl, expires_at, confidence, vector,
            entities, relations, supersedes,
        )  # fmt: skip
        if dedup is not None:
            if dedup != "exact":
                raise InvalidInputError("dedup", "expected None or 'exact'")
            twin = self._exact_twin(draft, now)
            if twin is not None:
                emit(self._metrics, "dedup_hit")
                return twin
        return self.remember_many([draft], now=now)[0]

    def _exact_twin(self, draft: Draft, now: _dt.datetime | None) -> Memory | None:
        prepared = drafts.prepare(draft, resolve_now(now))
        condition = Selection(prepared.created_at, prepared.namespace, tiers=[prepared.tier])
        sql, params = condition.compile()
        with self._db.read() as conn:
            return records.by_fingerprint(conn, prepared.fingerprint, sql, params)

    def find_by_fingerprint(
        self,
        namespace: str,
        tier: Tier | str,
        content: str,
        *,
        now: _dt.datetime | None = None,
    ) -> Memory | None:
        """The live, current memory restating ``content`` exactly (after normalisation).

        Normalisation is NFKC, case folding and collapsed whitespace; expired and
        superseded memories do not count.
        """
        return self._exact_twin(Draft(content, namespace=namespace, tier=tier), now)

    def remember_detailed(self, content: str, **kwargs: Any) -> Remembered:
        """Like :meth:`remember`, and report near duplicates found with the same embedding.

        Near duplicates are live, not superseded memories of the same namespace
        with cosine >= 0.80 (at most 5, best first, 160-character snippets).
        The write always happens: the list is a hint for the caller to forget,
        supersede or keep both. The content is embedded once, for both.

        Returns:
            The stored memory and its near duplicates.
        """
        now = kwargs.pop("now", None)
        try:
            draft = Draft(content, **kwargs)
        except TypeError as e:
            raise InvalidInputError("remember_detailed", str(e)) from None
        at = resolve_now(now)
        prepared = drafts.prepare(draft, at)
        embedded = self._embed([prepared], [_given_vector(draft.vector, self._embedder, 0)])
        similar: tuple[SimilarMemory, ...] = ()
        vectors = embedded[0]
        if vectors is not None and self._vectors is not None:
            similar = self._near_duplicates(prepared.namespace, vectors, at)
        with self._db.write() as conn:
            memory = writes.apply_batch(conn, self._lexical, [prepared], embedded)[0]
        return Remembered(memory, similar)

    def _near_duplicates(
        self, namespace: str, vectors: Embedded, now: int
    ) -> tuple[SimilarMemory, ...]:
        assert self._vectors is not None  # checked by the caller
        condition = Selection(now, namespace).compile()
        best: dict[int, float] = {}
        with self._db.read() as conn:
            for row in vectors.vectors:
                for key, score in search.nearest(
                    conn, self._vectors, row, condition, NEAR_DUP_LIMIT
                ):
                    if score >= NEAR_DUP_THRESHOLD and score > best.get(key, -1.0):
                        best[key] = score
            top = sorted(best.items(), key=lambda item: -item[1])[:NEAR_DUP_LIMIT]
            memories = records.select_by_keys(conn, [key for key, _ in top])
        return tuple(
            SimilarMemory(
                memories[key].id, _snippet(memories[key].content), score, memories[key].created_at
            )
            for key, score in top
        )

    def _embed(
        self, batch: Sequence[drafts.Prepared], given: Sequence[object | None]
    ) -> list[Embedded | None]:
        if self._embedder is None:
            if any(v is not None for v in given):
                raise InvalidInputError("vector", "the store was opened without an embedder")
            return [None] * len(batch)
        return list(embed_contents(self._embedder, [p.content for p in batch], given))

    def remember_many(
        self,
        drafts_: Iterable[Draft | str | dict[str, Any]],
        *,
        batch_size: int = 256,
        show_progress: bool = False,
        now: _dt.datetime | None = None,
    ) -> list[Memory]:
        """Store many memories: one transaction per batch.

        Every item is validated before the first batch is written, so a bad
        item applies nothing at all.

        Args:
            drafts_: :class:`Draft` objects, plain strings, or dicts of Draft fields.
            batch_size: Memories per transaction (1-10,000).
            show_progress: Show a progress bar.
            now: The write instant (default: the clock).

        Returns:
            The stored memories, in input order.

        Raises:
            InvalidInputError: When any item is invalid; nothing is written.
            ConflictError: When an id exists in another namespace; that batch
                is rolled back (earlier batches stay).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidInputError("batch_size", "expected an int")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise InvalidInputError("batch_size", f"must be within 1-{MAX_BATCH_SIZE}")
        if isinstance(drafts_, str | bytes) or not isinstance(drafts_, Iterable):
            raise InvalidInputError("drafts", "expected an iterable of drafts")
        at = resolve_now(now)
        prepared, given = [], []
        for i, item in enumerate(drafts_):
            if i >= MAX_DRAFTS:
                raise InvalidInputError("drafts", f"more than {MAX_DRAFTS} in one call")
            draft = drafts.coerce_draft(item, i)
            prepared.append(drafts.prepare(draft, at))
            given.append(_given_vector(draft.vector, self._embedder, i))
        stored: list[Memory] = []
        bar = tqdm(total=len(prepared), disable=not show_progress, unit="memory")
        with bar:
            starts = list(range(0, len(prepared), batch_size))
            for batch, embedded in self._embedded_batches(prepared, given, starts, batch_size):
                with self._db.write() as conn:
                    written = writes.apply_batch(conn, self._lexical, batch, embedded)
                    evicted = self._evict(conn, written)
                    self._maybe_save_index(conn)
                for memory in written:
                    emit(self._metrics, "upsert", "write", memory.tier.value)
                events: list[object] = [
                    MemoryWritten(m.id, m.namespace, m.tier.value) for m in written
                ]
                notify_committed(self, events + [MemoryDeleted(i) for i in evicted])
                self._fragments_on_write(written)
                stored += written
                bar.update(len(batch))
        return stored

    def _embedded_batches(
        self,
        prepared: list[drafts.Prepared],
        given: list[object | None],
        starts: list[int],
        size: int,
    ) -> Iterator[tuple[list[drafts.Prepared], list[Embedded | None]]]:
        """Yield each batch with its vectors, embedding the next batch meanwhile.

        Embedding happens before (never inside) a write transaction, so the
        writer lock is held only for the SQL; embedding the next batch in a
        worker thread while this one is written overlaps the two (onnxruntime
        releases the GIL).
        """

        def embed(start: int) -> list[Embedded | None]:
            return self._embed(prepared[start : start + size], given[start : start + size])

        if self._embedder is None or len(starts) < 2:
            for start in starts:
                yield prepared[start : start + size], embed(start)
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedmind-embed") as pool:
            pending = pool.submit(embed, starts[0])
            for i, start in enumerate(starts):
                embedded = pending.result()
                if i + 1 < len(starts):
                    pending = pool.submit(embed, starts[i + 1])
                yield prepared[start : start + size], embedded

    def _evict(self, conn: Any, written: Sequence[Memory]) -> list[str]:
        """Cap-cull: the oldest memories beyond the cap, evicted in the same transaction."""
        policy = self._eviction
        if policy is None:
            return []
        groups = {
            (m.namespace, m.tier.value if policy.tiers else None)
            for m in written
            if policy.applies(m)
        }
        keys = [
            k
            for ns, tier in sorted(groups, key=str)
            for k in lifecycle.oldest_beyond(conn, ns, tier, policy.max_records)
        ]
        if not keys:
            return []
        ids = [m.id for m in records.select_by_keys(conn, keys).values()]
        writes.delete_keys(conn, self._lexical, keys)
        return ids

    def _after_redaction(self, memory: Memory) -> None:
        notify_committed(self, [MemoryRedacted(memory.id)])
        self._fragments_on_write([memory])

    def _fragments_on_write(self, written: Sequence[Memory]) -> None:
        """Fragment-embed-on-write, best effort: failures are logged, never raised."""
        policy, chunker = self._fragment_policy, self._chunker
        if policy is None or chunker is None or self._embedder is None:
            return
        for memory in written:
            if policy.applies(memory):
                fragment_on_write(self, self._embedder, chunker, policy, memory)

    def _maybe_save_index(self, conn: Any) -> None:
        if self._vectors is not None and self._vectors.unsaved(conn) >= SAVE_INDEX_AFTER:
            self._vectors.save(conn)

    def forget(self, id: str, *, now: _dt.datetime | None = None) -> bool:
        """Tombstone a memory: it leaves every read; ``vacuum`` reclaims its space.

        Returns:
            ``False`` when the id does not exist or was already forgotten.
        """
        memory_id, at = validate_id(id), resolve_now(now)
        with self._db.write() as conn:
            forgotten = writes.forget(conn, self._lexical, memory_id, at)
        if forgotten:
            emit(self._metrics, "soft_delete")
            notify_committed(self, [MemoryForgotten(memory_id)])
        return forgotten

    def delete(self, id: str) -> bool:
        """Remove a memory at once (row, postings, tags).

        Returns:
            ``False`` when the id does not exist.
        """
        memory_id = validate_id(id)
        with self._db.write() as conn:
            deleted = writes.delete(conn, self._lexical, memory_id)
        if deleted:
            emit(self._metrics, "delete")
            notify_committed(self, [MemoryDeleted(memory_id)])
        return deleted

    # -- reads -------------------------------------------------------------------

    def get(self, id: str, *, as_of: _dt.datetime | None = None) -> Memory | None:
        """Return the memory with this id, or ``None`` when missing or forgotten.

        Superseded and contradicted memories are returned (they are history).
        With ``as_of``, only a memory valid at that instant is returned.
        """
        memory_id = validate_id(id)
        with self._db.read() as conn:
            memory = records.select_by_ids(conn, [memory_id]).get(memory_id)
        if memory is None or as_of is None:
            return memory
        at = to_micros(as_of, "as_of")
        starts = to_micros(memory.valid_from, "valid_from")
        ends = None if memory.valid_to is None else to_micros(memory.valid_to, "valid_to")
        return memory if starts <= at and (ends is None or at < ends) else None

    def vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        """The stored vector of each memory (its first chunk's), by id; missing ids are skipped.

        Returns:
            ``{id: float32 array}``.
        """
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidInputError("ids", "expected a list of ids")
        wanted = [validate_id(i, "ids") for i in ids]
        with self._db.read() as conn:
            found = records.find_many(conn, wanted)
            rows = {
                i: vector_rows.rows_of(conn, e.key) for i, e in found.items() if not e.forgotten
            }
        return {
            i: np.frombuffer(r[0][2], dtype="<f4").astype(np.float32) for i, r in rows.items() if r
        }

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        """Return the memories with these ids, in the order asked, skipping missing ones."""
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidInputError("ids", "expected a list of ids")
        wanted = [validate_id(i, "ids") for i in ids]
        with self._db.read() as conn:
            found = records.select_by_ids(conn, wanted)
        return [found[i] for i in wanted if i in found]

    def iter(
        self,
        namespace: NamespaceScope = None,
        *,
        where: Where | None = None,
        agent: str | None = None,
        session_id: str | None = None,
        tags: Sequence[str] = (),
        tiers: Sequence[Tier | str] = (),
        levels: Sequence[Level | str] = (),
        include_expired: bool = False,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        now: _dt.datetime | None = None,
    ) -> Iterator[Memory]:
        """Iterate memories in time order (``created_at``, then insertion).

        Pages are read in separate short transactions, so a long iteration
        never holds the database open against writers.

        Raises:
            FilterTypeError: When ``where`` compares a key with a value of the
                wrong type in a memory in scope.
        """
        selection = Selection(
            resolve_now(now), namespace, where, agent, session_id, tags, tiers, levels,
            include_expired, include_forgotten, include_superseded,
        )  # fmt: skip
        condition, params = selection.compile()
        after: tuple[int, int] | None = None
        while True:
            with self._db.read() as conn:
                page = records.page(conn, condition, params, after, _PAGE)
            for _, _, memory in page:
                yield memory
            if len(page) < _PAGE:
                return
            after = page[-1][0], page[-1][1]

    def recall(
        self,
        query: str,
        *,
        k: int = 8,
        namespace: NamespaceScope = None,
        where: Where | None = None,
        mode: Mode | str = Mode.HYBRID,
        agent: str | None = None,
        session_id: str | None = None,
        tags: Sequence[str] = (),
        tiers: Sequence[Tier | str] = (),
        levels: Sequence[Level | str] = (),
        include_expired: bool = False,
        as_of: _dt.datetime | None = None,
        recency: bool = False,
        expand_related: bool = False,
        follow_links: bool = False,
        rerank_alpha: float | None = None,
        ef_search: int | None = None,
        vector: Sequence[float] | None = None,
        now: _dt.datetime | None = None,
        explain: bool = False,
    ) -> Recall:
        """Recall the memories that best match ``query``.

        Args:
            query: Natural-language text; it is only ever data, never syntax.
            k: How many hits (1-10,000).
            namespace: ``"a/b"``, ``"a/b/*"`` (subtree), a list, or ``None`` (all).
            where: A metadata filter (see ``docs/reference/where.md``).
            mode: ``"hybrid"``, ``"vector"`` or ``"text"``.
            agent: Only memories written by this agent.
            session_id: Only memories written in this session.
            tags: Only memories carrying all of these tags.
            tiers: Only these tiers.
            levels: Only these levels.
            include_expired: Also memories past their TTL.
            as_of: Time travel: what was valid at this instant.
            recency: Add recency as a third RRF list over the same candidates
                (it breaks ties; it never brings in a memory by itself).
            follow_links: Also read the namespaces linked from ``namespace``
                (restricted to each link's tiers).
            expand_related: Append the hits' direct graph neighbours that pass
                the same filters, with score 0, after the ranked hits (they do
                not count against ``k``).
            rerank_alpha: Rerank the lexical list by vector similarity instead
                of fusing: ``>= 2`` reorders the top ``k`` by cosine, ``[1, 2)``
                breaks near-ties (δ = 0.05) by cosine, ``< 1`` blends
                ``α·bm25 + (1-α)·cosine``.
            ef_search: HNSW search breadth (default: scales with the index size).
            vector: The query's embedding, when you computed it already (used
                instead of embedding ``query``; ``query`` still feeds BM25).
            now: The instant expiry is evaluated at (default: the clock).
            explain: Add per-phase timings to the result.

        Returns:
            The hits, best first, with per-channel ranks and raw scores.

        Raises:
            InvalidInputError: When an argument is invalid.
            FilterTypeError: When ``where`` meets a stored value of another type.
        """
        if not isinstance(query, str):
            raise InvalidInputError("query", f"expected a str, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InvalidInputError("k", f"expected an int within 1-{MAX_K}")
        try:
            wanted = Mode(mode)
        except ValueError:
            raise InvalidInputError("mode", "expected 'hybrid', 'vector' or 'text'") from None
        selection = Selection(
            resolve_now(now), namespace, where, agent, session_id, tags, tiers, levels,
            include_expired, False, False, None if as_of is None else to_micros(as_of, "as_of"),
            self._grants(namespace) if follow_links and namespace is not None else (),
        )  # fmt: skip
        request = recall.Request(
            query, k, wanted, selection.compile(), bool(recency),
            _optional_number(rerank_alpha, "rerank_alpha"), _optional_ef(ef_search),
            bool(expand_related),
        )  # fmt: skip
        timer = recall.Timer()
        query_vector = None
        if self._embedder is None and vector is not None:
            raise InvalidInputError("vector", "the store was opened without an embedder")
        if self._embedder is not None and (wanted is not Mode.TEXT or rerank_alpha is not None):
            raw = self._embedder.embed_query(query) if vector is None else vector
            query_vector = normalized(raw, self._embedder.dims)[0]
            timer.lap("embed")
        with self._db.read() as conn:
            result = recall.execute(
                conn, self._lexical, self._vectors, query_vector, request, timer
            )
        reordered = plugin_rerank(query, result.hits)
        if reordered is not None:
            result = recall.reordered(result, reordered)
            timer.lap("rerank")
        return recall.with_timings(result, timer.phases) if explain else result

    def stats(self, *, now: _dt.datetime | None = None) -> Stats:
        """Counts and sizes: live, forgotten, per agent, namespace and tier, file size."""
        at = resolve_now(now)
        with self._db.read() as conn:
            counts = records.statistics(conn, at)
            lexical_docs, lexical_terms = self._lexical.statistics(conn)
            vector_count = vector_rows.count(conn)
            graph_entities, graph_relations = graph.counts(conn)
            recorded = vector_rows.read_identity(conn)
        return Stats(
            live=counts["live"],
            forgotten=counts["forgotten"],
            expired=counts["expired"],
            superseded=counts["superseded"],
            by_agent={
                agent: AgentStats(live, tuple(sessions))
                for agent, (live, sessions) in counts["by_agent"].items()
            },
            by_namespace=counts["by_namespace"],
            by_tier=counts["by_tier"],
            lexical_documents=lexical_docs,
            lexical_terms=lexical_terms,
            vectors=vector_count,
            graph_entities=graph_entities,
            graph_relations=graph_relations,
            embedder=recorded.get("model_id"),
            file_bytes=self._db.file_bytes(),
            schema_version=self._db.schema_version,
        )

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Save the vector index if it moved on, then close the store.

        Further calls raise :class:`~embedmind.errors.StoreClosedError`.
        """
        try:
            if self._vectors is not None and self._vectors.file_path is not None:
                with self._db.write() as conn:
                    self._vectors.save(conn)
        except (StorageError, OSError) as e:  # the index is a cache: the next open rebuilds it
            logger.warning("could not save the vector index of %s: %s", self.path, e)
        finally:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"


def _recorded_model(database: Database) -> str | None:
    """The store's recorded model, when it is a registered embedder (reopen with it by default)."""
    with database.read() as conn:
        recorded = vector_rows.read_identity(conn).get("model_id")
    return recorded if recorded is not None and embedder_factory(recorded) else None


def _check_identity(database: Database, embedder: Embedder) -> None:
    given = identity(embedder)
    with database.write() as conn:
        recorded = vector_rows.read_identity(conn)
        if not recorded:
            vector_rows.write_identity(conn, given)
        elif recorded != given:
            raise EmbedderMismatchError(database.path, recorded, given)


def _given_vector(vector: object, embedder: Embedder | None, index: int) -> object | None:
    if vector is None:
        return None
    if embedder is None:
        raise InvalidInputError(f"drafts[{index}].vector", "the store has no embedder")
    row: object = normalized(vector, embedder.dims, f"drafts[{index}].vector")[0]
    return row


def _snippet(content: str) -> str:
    if len(content) <= NEAR_DUP_SNIPPET:
        return content
    return content[:NEAR_DUP_SNIPPET] + "…"


def _optional_number(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidInputError(field, "expected a number")
    return float(value)


def _optional_ef(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise InvalidInputError("ef_search", "expected an int within 1-100,000")
    return value
