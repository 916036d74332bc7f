"""Reads over a backend read session: get, vectors, iter, recall, stats.

Every read runs in one read session per call (``iter``: per page), so it sees
a consistent snapshot while writers go on. Recall itself (channels, fusion,
rerank) is :mod:`embedmind.engine.recall`; this module validates the call,
embeds the query and adds what the result reports beside the hits.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from embedmind import query_dates
from embedmind.backend.protocol import ReadSession
from embedmind.backend.values import check_blobs
from embedmind.checks import an_int, finite_number, is_number
from embedmind.drafts import query_text
from embedmind.embedders.adapt import normalized_one
from embedmind.engine import lifecycle
from embedmind.engine.recall import (
    TEXT,
    Request,
    Timer,
    at_least,
    execute,
    reordered,
    with_timings,
)
from embedmind.engine.state import Engine
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

MAX_K = 10_000
_PAGE = 256


def get(engine: Engine, id: str, *, as_of: _dt.datetime | None = None) -> Memory | None:
    """Return the memory with this id, or ``None`` when missing or forgotten."""
    memory_id = validate_id(id)
    with engine.backend.read() as session:
        memory = session.records.load_ids([memory_id]).get(memory_id)
    if memory is None or as_of is None:
        return memory
    at = to_micros(as_of, "as_of")
    starts = to_micros(memory.valid_from, "valid_from")
    ends = optional_to_micros(memory.valid_to, "valid_to")
    return memory if starts <= at and (ends is None or at < ends) else None


def vectors(engine: Engine, ids: Sequence[str]) -> dict[str, Any]:
    """The stored vector of each memory (its first chunk's), by id; missing ids are skipped."""
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidInputError("ids", "expected a list of ids")
    wanted = [validate_id(i, "ids") for i in ids]
    with engine.backend.read() as session:
        found = session.records.find_many(wanted)
        rows = {i: session.channels.vector_rows(e.key) for i, e in found.items() if not e.forgotten}
        dims = int(session.meta.identity().get("dims", 0))
    # A damaged blob is a typed StorageError, never numpy's ValueError.
    check_blobs([r[0][2] for r in rows.values() if r], dims)
    return {i: np.frombuffer(r[0][2], dtype="<f4").astype(np.float32) for i, r in rows.items() if r}


def get_many(engine: Engine, ids: Sequence[str]) -> list[Memory]:
    """Return the memories with these ids, in the order asked, skipping missing ones."""
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidInputError("ids", "expected a list of ids")
    wanted = [validate_id(i, "ids") for i in ids]
    with engine.backend.read() as session:
        found = session.records.load_ids(wanted)
    return [found[i] for i in wanted if i in found]


def iterate(
    engine: Engine,
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
    """Iterate memories in time order (``created_at``, then insertion)."""
    selection = Selection.of(
        resolve_now(now), namespace, where, agent=agent, session_id=session_id, tags=tags,
        tiers=tiers, levels=levels, include_expired=include_expired,
        include_forgotten=include_forgotten, include_superseded=include_superseded,
    )  # fmt: skip
    after: tuple[int, int] | None = None
    while True:
        with engine.backend.read() as session:
            page = session.records.page(selection, after, _PAGE)
        for _, _, memory in page:
            yield memory
        if len(page) < _PAGE:
            return
        after = page[-1][0], page[-1][1]


def recall(
    engine: Engine,
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
    """Recall the memories that best match ``query``."""
    query = query_text(query)
    an_int(k, "k", low=1, high=MAX_K)
    threshold = _min_score(min_score)
    try:
        wanted = Mode(mode)
    except ValueError:
        raise InvalidInputError("mode", "expected 'hybrid', 'vector' or 'text'") from None
    at = resolve_now(now)
    selection = Selection.of(
        at, namespace, where, agent=agent, session_id=session_id, tags=tags, tiers=tiers,
        levels=levels, include_expired=include_expired,
        as_of=optional_to_micros(as_of, "as_of"),
        grants=lifecycle.grants(engine, namespace)
        if follow_links and namespace is not None else (),
    )  # fmt: skip
    request = Request(
        query, k, wanted, selection, bool(recency),
        _optional_number(rerank_alpha, "rerank_alpha"), _optional_ef(ef_search),
        bool(expand_related),
        windows=tuple(query_dates.windows(query, now=from_micros(at))) if temporal else (),
        widen=bool(widen), latest=bool(latest),
    )  # fmt: skip
    timer = Timer()
    query_vector = None
    embedder = engine.embedder
    if embedder is None and vector is not None:
        raise InvalidInputError("vector", "the store was opened without an embedder")
    if embedder is not None and (wanted is not Mode.TEXT or rerank_alpha is not None):
        raw = embedder.embed_query(query) if vector is None else vector
        query_vector = normalized_one(raw, embedder.dims)
        timer.lap("embed")
    with engine.backend.read() as session:
        result = execute(session, query_vector, request, timer)
        if query_vector is not None and wanted is not Mode.TEXT:
            result = _note_missing_vectors(session, result, request.selection)
        if explain:
            result = _with_context_terms(session, result, query)
    plugin_order = plugin_rerank(query, result.hits)
    if plugin_order is not None:
        result = reordered(result, plugin_order)
        timer.lap("rerank")
    if threshold is not None:
        result = at_least(result, threshold)
    return with_timings(result, timer.phases) if explain else result


def _min_score(value: object) -> float | None:
    """``min_score`` checked: ``None``, or a finite number within 0-1.

    Raises:
        InvalidInputError: When it is not a number, not finite, or outside 0-1.
    """
    number = _optional_number(value, "min_score")
    if number is None:
        return None
    finite_number(number, "min_score")
    if not 0.0 <= number <= 1.0:
        raise InvalidInputError(
            "min_score", f"expected a probability within 0-1, got {number!r}; scores lie in 0-1"
        )
    return number


def _note_missing_vectors(session: ReadSession, result: Recall, selection: Selection) -> Recall:
    """Add a note to ``result`` when memories in scope have no vector."""
    keys = session.channels.missing_vectors()
    if not keys:  # the common case: one tiny statement, no scan
        return result
    in_scope = len(session.records.admitted(keys, selection))
    if not in_scope:
        return result
    counted = "1 memory in scope has" if in_scope == 1 else f"{in_scope} memories in scope have"
    note = (
        f"{counted} no vector (written while the store was "
        "open without an embedder), so vector search cannot find them: fill them with "
        "`embedmind reembed --missing` or embedmind.reembed(path, embedder, missing=True)"
    )
    return dataclasses.replace(result, degraded=(*result.degraded, note))


def stats(engine: Engine, *, now: _dt.datetime | None = None) -> Stats:
    """Counts and sizes: live, forgotten, per agent, namespace and tier, file size."""
    at = resolve_now(now)
    backend = engine.backend
    with backend.read() as session:
        counts = session.records.statistics(at)
        lexical_docs, lexical_terms = session.channels.text_statistics()
        vector_count = session.channels.vector_count()
        graph_entities, graph_relations = session.graph.counts()
        recorded = session.meta.identity()
        # A store that never had a model has no vectors to miss.
        missing = session.channels.missing_vector_count() if recorded else 0
        context = session.sessions.context_enabled()
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
        file_bytes=backend.file_bytes(),
        schema_version=backend.schema_version,
        missing_vectors=missing,
        session_context=context,
    )


def _with_context_terms(session: ReadSession, result: Recall, query: str) -> Recall:
    """``result`` with each text-channel hit naming the query terms it matched only through context.

    Only ``explain=True`` pays for it: one postings read per text hit, none
    when the store's session context is off.
    """
    if not session.sessions.context_enabled():
        return result
    keys = {i: e.key for i, e in session.records.find_many(result.ids).items()}
    hits = []
    for hit in result.hits:
        text = hit.channels.get(TEXT)
        terms = session.channels.lexical_terms(keys[hit.id], hit.content, query) if text else ()
        if text is not None and terms:
            channels = {**hit.channels, TEXT: dataclasses.replace(text, via_context=terms)}
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
