"""Read methods of :class:`embedmind.Store`: get, vectors, iter, recall, stats.

The work is done in :mod:`embedmind.engine.reads` (and recall's ranking in
:mod:`embedmind.engine.recall`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Sequence
from typing import Any

from embedmind.engine import reads
from embedmind.facade import Facade
from embedmind.model import Level, Memory, Mode, NamespaceScope, Recall, Stats, Tier, Where

MAX_K = reads.MAX_K


class ReadMethods(Facade):
    """Mixed into :class:`embedmind.Store`."""

    def get(self, id: str, *, as_of: _dt.datetime | None = None) -> Memory | None:
        """Return the memory with this id, or ``None`` when missing or forgotten.

        Superseded and contradicted memories are returned (they are history).
        With ``as_of``, only a memory valid at that instant is returned.
        """
        return reads.get(self._engine, id, as_of=as_of)

    def vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        """The stored vector of each memory (its first chunk's), by id; missing ids are skipped.

        Returns:
            ``{id: float32 array}``.
        """
        return reads.vectors(self._engine, ids)

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        """Return the memories with these ids, in the order asked, skipping missing ones."""
        return reads.get_many(self._engine, ids)

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
        return reads.iterate(
            self._engine,
            namespace,
            where=where,
            agent=agent,
            session_id=session_id,
            tags=tags,
            tiers=tiers,
            levels=levels,
            include_expired=include_expired,
            include_superseded=include_superseded,
            include_forgotten=include_forgotten,
            now=now,
        )

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
        temporal: bool = False,
        widen: bool = False,
        latest: bool = False,
        expand_related: bool = False,
        follow_links: bool = False,
        rerank_alpha: float | None = None,
        ef_search: int | None = None,
        vector: Sequence[float] | None = None,
        now: _dt.datetime | None = None,
        explain: bool = False,
        min_score: float | None = None,
    ) -> Recall:
        """Recall the memories that best match ``query``.

        In every mode a hit's ``score`` is the estimated probability, in [0, 1],
        that it is relevant to the query (calibrated on the LoCoMo development
        split: ``docs/explanation/concepts.md``); text and vector mode keep
        their channel's order, and each channel's raw BM25 or cosine is in
        ``hit.channels``. ``recency``, ``temporal``, ``latest`` and
        ``rerank_alpha`` reorder hits; each keeps its score.

        Args:
            query: Natural-language text; it is only ever data, never syntax (at
                most 1 MiB of characters, the longest a memory can be).
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
            recency: Add recency (newest first) as one more RRF list, weighted
                like the others, over the candidates the content channels found:
                it reorders them toward newer memories (and settles ties) but
                never brings in a memory by itself.
            follow_links: Also read the namespaces linked from ``namespace``
                (restricted to each link's tiers).
            expand_related: Append the hits' direct graph neighbours that pass
                the same filters, with score 0, after the ranked hits (they do
                not count against ``k``).
            temporal: Read the dates the query names ("on 8 May, 2023", "in July
                2023"; with ``now``, "yesterday", "2 weeks ago", "last month")
                and add one more RRF list: the candidates created within ten
                days of such a date, in their fused order. Like ``recency`` it
                moves candidates up and never brings one in; a query that names
                no date gives the same result as without it. With the store's
                date words on (``Store.open(date_words=...)``), a day or month
                named with its year already matches by text without it; this
                adds the padding and the relative dates. Measured on the
                LoCoMo development split with session context on: recall@10
                0.731 -> 0.742, hit@10 0.802 -> 0.814 (temporal questions 0.806
                -> 0.827; ``docs/benchmarks.md``).
            widen: Candidate widening (hybrid mode and ``rerank_alpha``): one
                sub-query per key term (the query's two rarest) brings its ten
                best memories into the lexical list, scored with the whole
                query's BM25, so a turn that holds the key entity but few other
                query words can reach fusion. A text-only ranking is unchanged.
                ``explain`` is not needed to see it: such a hit's ``text``
                channel names the term (``ChannelScore.via_widening``).
            latest: When the query asks for a current value ("now",
                "currently", "latest", "still", "most recent", "these days"),
                put the result's cluster - its first five hits scoring at least
                half the best score - in chronological order, newest first
                (``created_at``, then write order). Post-retrieval: no hit
                enters or leaves; the reordered hits carry a ``latest`` channel.
            rerank_alpha: Rerank a pool of the first 40 lexical hits (whatever
                ``k``) by vector similarity instead of fusing: ``>= 2`` reorders
                the pool by cosine, ``[1, 2)`` breaks near-ties (δ = 0.05) by
                cosine, ``< 1`` blends ``α·bm25 + (1-α)·cosine``; the first ``k``
                are returned. It must be finite, and it applies to the
                ``"hybrid"`` and ``"text"`` modes (both rerank the lexical
                list): with ``mode="vector"`` there is no lexical list, and it
                is refused with :class:`~embedmind.errors.InvalidInputError`.
            ef_search: HNSW search breadth (default: scales with the index size).
            vector: The query's embedding, when you computed it already (used
                instead of embedding ``query``; ``query`` still feeds BM25).
            now: The instant expiry is evaluated at, and relative dates are
                counted from with ``temporal`` (default: the clock).
            explain: Add per-phase timings to the result, and name on each
                hit's ``text`` channel the query terms it matched only through
                session context (``ChannelScore.via_context``).
            min_score: Drop the hits scoring below this (0-1): exactly the
                unthresholded result with those hits left out, ranks unchanged.

        Returns:
            The hits, best first, with per-channel ranks and raw scores. When
            the vector channel ran and memories in scope have no vector
            (written while the store was open with ``embedder=None``), a note
            in ``degraded`` counts them: vector search cannot find them until
            :func:`embedmind.reembed` with ``missing=True`` fills them.

        Raises:
            InvalidInputError: When an argument is invalid.
            FilterTypeError: When ``where`` meets a stored value of another type.
        """
        return reads.recall(
            self._engine,
            query,
            k=k,
            namespace=namespace,
            where=where,
            mode=mode,
            agent=agent,
            session_id=session_id,
            tags=tags,
            tiers=tiers,
            levels=levels,
            include_expired=include_expired,
            as_of=as_of,
            recency=recency,
            temporal=temporal,
            widen=widen,
            latest=latest,
            expand_related=expand_related,
            follow_links=follow_links,
            rerank_alpha=rerank_alpha,
            ef_search=ef_search,
            vector=vector,
            now=now,
            explain=explain,
            min_score=min_score,
        )

    def stats(self, *, now: _dt.datetime | None = None) -> Stats:
        """Counts and sizes: live, forgotten, per agent, namespace and tier, file size."""
        return reads.stats(self._engine, now=now)
