"""Read methods of :class:`embedmind.Store`: get, vectors, iter, recall, stats.

Every read runs in one read transaction per call (``iter``: per page), so it
sees a consistent snapshot while writers go on.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from embedmind import query_dates
from embedmind.backend.sqlite import graph_rows as graph
from embedmind.backend.sqlite import records, vector_rows
from embedmind.backend.sqlite import session_rows as sessions
from embedmind.backend.sqlite.backend import SqliteBackend
from embedmind.backend.sqlite.database import Database
from embedmind.backend.sqlite.hnsw import VectorIndex
from embedmind.backend.sqlite.lexical.context import context_terms
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.backend.sqlite.missing_vectors import MissingVectors
from embedmind.backend.sqlite.selection_sql import compile_selection
from embedmind.checks import an_int, is_number
from embedmind.drafts import query_text
from embedmind.embedders.adapt import normalized_one
from embedmind.embedders.protocol import Embedder
from embedmind.engine import recall
from embedmind.errors import InvalidInputError
from embedmind.ids import validate_id
from embedmind.model import (
    AgentStats,
    Level,
    Memory,
    Mode,
    NamespaceScope,
    Recall,
    Stats,
    Tier,
    Where,
)
from embedmind.plugins import rerank as plugin_rerank
from embedmind.query.selection import Selection
from embedmind.timestamps import from_micros, optional_to_micros, resolve_now, to_micros

logger = logging.getLogger(__name__)

MAX_K = 10_000
_PAGE = 256


class ReadMethods:
    """Mixed into :class:`embedmind.Store`."""

    _db: Database
    _lexical: LexicalIndex
    _embedder: Embedder | None
    _backend: SqliteBackend
    _vectors: VectorIndex | None
    _missing_vectors: MissingVectors | None = None  # made on the first vector recall

    # Provided by LifecycleMethods (declared, not defined, so the MRO finds theirs).
    _grants: Callable[[object], list[tuple[str, tuple[str, ...]]]]

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
        ends = optional_to_micros(memory.valid_to, "valid_to")
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
            dims = int(vector_rows.read_identity(conn).get("dims", 0))
        # A damaged blob is a typed StorageError, never numpy's ValueError.
        vector_rows.check_blobs([r[0][2] for r in rows.values() if r], dims)
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
        selection = Selection.of(
            resolve_now(now), namespace, where, agent=agent, session_id=session_id, tags=tags,
            tiers=tiers, levels=levels, include_expired=include_expired,
            include_forgotten=include_forgotten, include_superseded=include_superseded,
        )  # fmt: skip
        condition, params = compile_selection(selection)
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
    ) -> Recall:
        """Recall the memories that best match ``query``.

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
                no date gives the same result as without it. Measured on the
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
        query = query_text(query)
        an_int(k, "k", low=1, high=MAX_K)
        try:
            wanted = Mode(mode)
        except ValueError:
            raise InvalidInputError("mode", "expected 'hybrid', 'vector' or 'text'") from None
        at = resolve_now(now)
        selection = Selection.of(
            at, namespace, where, agent=agent, session_id=session_id, tags=tags, tiers=tiers,
            levels=levels, include_expired=include_expired,
            as_of=optional_to_micros(as_of, "as_of"),
            grants=self._grants(namespace) if follow_links and namespace is not None else (),
        )  # fmt: skip
        request = recall.Request(
            query, k, wanted, selection, bool(recency),
            _optional_number(rerank_alpha, "rerank_alpha"), _optional_ef(ef_search),
            bool(expand_related),
            windows=tuple(query_dates.windows(query, now=from_micros(at))) if temporal else (),
            widen=bool(widen), latest=bool(latest),
        )  # fmt: skip
        timer = recall.Timer()
        query_vector = None
        if self._embedder is None and vector is not None:
            raise InvalidInputError("vector", "the store was opened without an embedder")
        if self._embedder is not None and (wanted is not Mode.TEXT or rerank_alpha is not None):
            raw = self._embedder.embed_query(query) if vector is None else vector
            query_vector = normalized_one(raw, self._embedder.dims)
            timer.lap("embed")
        with self._backend.read() as session:
            conn = session.conn
            result = recall.execute(session, query_vector, request, timer)
            if query_vector is not None and wanted is not Mode.TEXT:
                result = self._note_missing_vectors(
                    conn, result, compile_selection(request.selection)
                )
            if explain:
                result = _with_context_terms(conn, result, query)
        reordered = plugin_rerank(query, result.hits)
        if reordered is not None:
            result = recall.reordered(result, reordered)
            timer.lap("rerank")
        return recall.with_timings(result, timer.phases) if explain else result

    def _note_missing_vectors(
        self, conn: Any, result: Recall, condition: tuple[str, list[Any]]
    ) -> Recall:
        """Add a note to ``result`` when memories in scope have no vector."""
        if self._missing_vectors is None:
            self._missing_vectors = MissingVectors()
        keys = self._missing_vectors.live_keys(conn)
        if not keys:  # the common case: one tiny statement, no scan
            return result
        in_scope = len(records.keys_passing(conn, keys, *condition))
        if not in_scope:
            return result
        counted = "1 memory in scope has" if in_scope == 1 else f"{in_scope} memories in scope have"
        note = (
            f"{counted} no vector (written while the store was "
            "open without an embedder), so vector search cannot find them: fill them with "
            "`embedmind reembed --missing` or embedmind.reembed(path, embedder, missing=True)"
        )
        return dataclasses.replace(result, degraded=(*result.degraded, note))

    def stats(self, *, now: _dt.datetime | None = None) -> Stats:
        """Counts and sizes: live, forgotten, per agent, namespace and tier, file size."""
        at = resolve_now(now)
        with self._db.read() as conn:
            counts = records.statistics(conn, at)
            lexical_docs, lexical_terms = self._lexical.statistics(conn)
            vector_count = vector_rows.count(conn)
            graph_entities, graph_relations = graph.counts(conn)
            recorded = vector_rows.read_identity(conn)
            # A store that never had a model has no vectors to miss.
            missing = vector_rows.missing_count(conn) if recorded else 0
            context = sessions.enabled(conn)
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
            missing_vectors=missing,
            session_context=context,
        )


def _with_context_terms(conn: Any, result: Recall, query: str) -> Recall:
    """``result`` with each text-channel hit naming the query terms it matched only through context.

    Only ``explain=True`` pays for it: one postings read per text hit, none
    when the store's session context is off.
    """
    if not sessions.enabled(conn):
        return result
    keys = {i: e.key for i, e in records.find_many(conn, result.ids).items()}
    hits = []
    for hit in result.hits:
        text = hit.channels.get(recall.TEXT)
        terms = context_terms(conn, keys[hit.id], hit.content, query) if text else ()
        if text is not None and terms:
            channels = {**hit.channels, recall.TEXT: dataclasses.replace(text, via_context=terms)}
            hit = dataclasses.replace(hit, channels=channels)
        hits.append(hit)
    return dataclasses.replace(result, hits=tuple(hits))


def _optional_number(value: object, field: str) -> float | None:
    if value is None:
        return None
    if not is_number(value) or value != value:  # infinities go on, to the finite check
        raise InvalidInputError(field, "expected a number")
    return float(value)


def _optional_ef(value: object) -> int | None:
    return None if value is None else an_int(value, "ef_search", low=1, high=100_000)
