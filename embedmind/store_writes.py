"""Write methods of :class:`embedmind.Store`: remember (single, detailed, many), forget, delete.

Input is validated and embedded before any transaction; each batch is one
transaction of the commit path (:mod:`embedmind.engine.commit`), which evicts, saves
the indexes when due, counts, notifies listeners and derives fragments.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from embedmind import drafts, writes
from embedmind.backend.sqlite import records, vector_rows
from embedmind.backend.sqlite import vector_search as search
from embedmind.backend.sqlite.database import Database
from embedmind.backend.sqlite.hnsw import VectorIndex
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.backend.sqlite.selection_sql import compile_selection
from embedmind.checks import is_int
from embedmind.embedders.adapt import normalized_one
from embedmind.embedders.protocol import Embedder
from embedmind.engine.commit import CommitPath, Committed, changed, emit
from embedmind.errors import InvalidInputError
from embedmind.ids import validate_id
from embedmind.model import (
    Draft,
    Level,
    Memory,
    Metadata,
    Remembered,
    SimilarMemory,
    Tier,
)
from embedmind.query.selection import Selection
from embedmind.timestamps import resolve_now
from embedmind.vectors.embedding import Embedded, embed_contents

if TYPE_CHECKING:
    from embedmind.fragments import Fragments

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
MAX_BATCH_SIZE = 10_000
MAX_DRAFTS = 10_000_000


class WriteMethods:
    """Mixed into :class:`embedmind.Store`."""

    _db: Database
    _lexical: LexicalIndex
    _embedder: Embedder | None
    _vectors: VectorIndex | None
    fragments: Fragments
    _metrics: Any
    _commit: CommitPath
    _warned_vectorless = False  # set on the instance by the first warning

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
            now: The write instant (default: the clock). When superseding, it
                (or ``valid_from``) must be later than each superseded memory's
                ``valid_from``: an earlier one is refused, never clamped.

        Returns:
            The stored memory (or, with ``dedup="exact"``, the existing one).

        Raises:
            InvalidInputError: When an argument is invalid (content empty or only
                whitespace among them); nothing is written.
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
        condition = Selection.of(prepared.created_at, prepared.namespace, tiers=[prepared.tier])
        sql, params = compile_selection(condition)
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
        memory = self._commit_batch([prepared], embedded)[0]
        return Remembered(memory, similar)

    def _near_duplicates(
        self, namespace: str, vectors: Embedded, now: int
    ) -> tuple[SimilarMemory, ...]:
        assert self._vectors is not None  # checked by the caller
        condition = compile_selection(Selection.of(now, namespace))
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
        if not is_int(batch_size):
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
                stored += self._commit_batch(batch, embedded)
                bar.update(len(batch))
        return stored

    def _commit_batch(
        self, batch: Sequence[drafts.Prepared], embedded: Sequence[Embedded | None]
    ) -> list[Memory]:
        """Write one batch in one transaction of the commit path."""
        with self._commit.write() as tx:
            written = writes.apply_batch(tx.conn, self._lexical, batch, embedded)
            self._warn_if_vectorless(tx.conn)
            tx.record(Committed("write", written=tuple(written)))
            closed = [t for p in batch for t in p.supersedes]
            if closed:  # the versions a supersede replaced left recall: report them
                found = records.find_many(tx.conn, closed)
                keys = [found[t].key for t in closed if t in found]
                tx.record(Committed("supersede", updated=changed(tx.conn, keys)))
        return written

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

    def _warn_if_vectorless(self, conn: Any) -> None:
        """Warn, once per open store, that a write without an embedder got no vector.

        A store that has a model gives every memory a vector; one opened with
        ``embedder=None`` cannot, and vector recall never finds what it writes.
        The write is still right to accept (a text-only client is legitimate),
        so this says it once rather than on every write.
        """
        if self._embedder is not None or self._warned_vectorless:
            return
        model = vector_rows.read_identity(conn).get("model_id")
        if model is None:  # a text-only store: nothing is missing
            return
        self._warned_vectorless = True
        logger.warning(
            "%s has vectors (model %s) but is open with embedder=None: memories written now "
            "get no vector and vector search will not find them; open it with its embedder, "
            "or fill them later with `embedmind reembed --missing`",
            self._db.path, model,
        )  # fmt: skip

    def forget(self, id: str, *, now: _dt.datetime | None = None) -> bool:
        """Tombstone a memory: it leaves every read; ``vacuum`` reclaims its space.

        Returns:
            ``False`` when the id does not exist or was already forgotten.
        """
        memory_id, at = validate_id(id), resolve_now(now)
        with self._commit.write() as tx:
            forgotten = writes.forget(tx.conn, self._lexical, memory_id, at)
            if forgotten:
                tx.record(Committed("forget", forgotten=(memory_id,)))
        return forgotten

    def delete(self, id: str) -> bool:
        """Remove a memory at once (row, postings, tags).

        Returns:
            ``False`` when the id does not exist.
        """
        memory_id = validate_id(id)
        with self._commit.write() as tx:
            deleted = writes.delete(tx.conn, self._lexical, memory_id)
            if deleted:
                tx.record(Committed("delete", deleted=(memory_id,)))
        return deleted


def _given_vector(vector: object, embedder: Embedder | None, index: int) -> object | None:
    if vector is None:
        return None
    if embedder is None:
        raise InvalidInputError(f"drafts[{index}].vector", "the store has no embedder")
    # One vector: a caller passing several would otherwise see all but the first dropped.
    row: object = normalized_one(vector, embedder.dims, f"drafts[{index}].vector")
    return row


def _snippet(content: str) -> str:
    if len(content) <= NEAR_DUP_SNIPPET:
        return content
    return content[:NEAR_DUP_SNIPPET] + "…"
