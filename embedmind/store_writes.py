"""Write methods of :class:`embedmind.Store`: remember (single, detailed, many), forget, delete.

The work is done in :mod:`embedmind.engine.writes`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from typing import Any

from embedmind.engine import writes
from embedmind.facade import Facade
from embedmind.model import Draft, Level, Memory, Metadata, Remembered, Tier


class WriteMethods(Facade):
    """Mixed into :class:`embedmind.Store`."""

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
        return writes.remember(self._engine, draft, dedup, now)

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
        return writes.find_by_fingerprint(self._engine, namespace, tier, content, now=now)

    def remember_detailed(self, content: str, **kwargs: Any) -> Remembered:
        """Like :meth:`remember`, and report near duplicates found with the same embedding.

        Near duplicates are live, not superseded memories of the same namespace
        with cosine >= 0.80 (at most 5, best first, 160-character snippets).
        The write always happens: the list is a hint for the caller to forget,
        supersede or keep both. The content is embedded once, for both.

        Returns:
            The stored memory and its near duplicates.
        """
        return writes.remember_detailed(self._engine, content, **kwargs)

    def remember_many(
        self,
        drafts_: Iterable[Draft | str | dict[str, Any]],
        *,
        batch_size: int | None = None,
        show_progress: bool = False,
        now: _dt.datetime | None = None,
    ) -> list[Memory]:
        """Store many memories: one transaction per batch.

        Every item is validated before the first batch is written, so a bad
        item applies nothing at all.

        The store embeds the next batch while it writes the current one, and
        extends the vector index with a batch while writing its text index, so
        a load that embeds runs at about the embedder's rate. Each batch holds
        the writer lock for its one transaction: another thread's or process's
        write waits for the batch in progress. By default batches are sized to
        hold the lock about 0.25 s each (256 memories at first, then up to
        10,000 as the machine and the store allow): a text-only load of 100k
        took 1.5 times as long as in batches of 10,000, where batches of 256
        took 3.4 times, and another writer's p99 wait stayed near 0.3 s
        (``embedmind bench ingest`` reports it). A fixed ``batch_size`` makes
        the batches, and so what a failed batch rolls back, the same on every
        run.

        Args:
            drafts_: :class:`Draft` objects, plain strings, or dicts of Draft fields.
            batch_size: Memories per transaction (1-10,000), or ``None`` to size
                each batch by the writer-lock time of the ones before it.
            show_progress: Show a progress bar.
            now: The write instant (default: the clock).

        Returns:
            The stored memories, in input order.

        Raises:
            InvalidInputError: When any item is invalid; nothing is written.
            ConflictError: When an id exists in another namespace; that batch
                is rolled back (earlier batches stay).
        """
        return writes.remember_many(
            self._engine, drafts_, batch_size=batch_size, show_progress=show_progress, now=now
        )

    def forget(self, id: str, *, now: _dt.datetime | None = None) -> bool:
        """Tombstone a memory: it leaves every read; ``vacuum`` reclaims its space.

        Returns:
            ``False`` when the id does not exist or was already forgotten.
        """
        return writes.forget(self._engine, id, now=now)

    def delete(self, id: str) -> bool:
        """Remove a memory at once (row, postings, tags).

        Returns:
            ``False`` when the id does not exist.
        """
        return writes.delete(self._engine, id)
