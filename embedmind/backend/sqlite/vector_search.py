"""Filtered vector search without under-return.

usearch has no filter predicate, so the search is planned per query: search
the HNSW graph for a pool of nearest chunks, keep the ones whose memory the
:class:`Selection` admits (checked on a growing best-first prefix of the pool,
:func:`admitted_prefix`), and widen the pool — sized from the admitted
fraction seen so far — until ``k`` memories survive with a margin. When the
admitted set looks small (at most :data:`EXACT_ADMITTED` vectors) or the pool
grows past :data:`EXACT_AFTER`, every admitted memory's vectors are scored
exactly with numpy instead.
A memory with several chunks counts once, under its best chunk.

The graph holds float16 copies of the vectors, so its cosines are about 2e-5
off. A caller that reports scores asks for the first hits' exact
(``exact_first``): those hits, and the few candidates close enough to overtake
them, are scored again from their stored float32 rows (:func:`rescored`), as
:func:`exact` scores everything it reads. Each row is a random read of a large
table, so only the hits the caller reports are read.

The same planner serves the fragment index with a per-record cap
(:func:`begin_nearest`): the fragment seed's contract is that with
``max_per_record=n`` no record contributes more than ``n`` hits, the cap
applied *during* selection, before the top-``k`` cut.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec, TypeVar

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite import records, vector_rows, workers
from embedmind.backend.sqlite.hnsw import Tail, VectorIndex, default_ef
from embedmind.backend.sqlite.vector_owners import UNKNOWN
from embedmind.backend.sqlite.vector_rows import MEMORY, Space

EXACT_AFTER = 16_384
"""Pool size past which the planner scores the admitted memories exactly."""
EXACT_ADMITTED = 5_000
"""Estimated admitted vectors at or below which exact scoring is cheaper than widening."""
RESCORE_MARGIN = 8 * 2**-11
"""How far below the ``k``-th graph cosine a candidate is still scored exactly (about 0.004).

float16 keeps 11 significant bits: rounding the components of two unit
vectors, and the norms the cosine divides by, moves their cosine by at most
about ``4 * 2**-11`` (typically 2e-5). A candidate more than twice that below
the ``k``-th cannot overtake it, nor a hit of its own record, once both are exact.
"""


POOL_MIN = 80
"""The fewest candidates the first graph search asks for.

A run of near-ties longer than the pool is cut where the pool ends, so which
of them a small ``k`` keeps is not always what a larger ``k`` ranks first: the
floor keeps that true for runs of up to 80 (``4 * FUSION_DEPTH``, what the
fusion depth alone asked for). It costs nothing measurable: at 1M vectors the
graph search took the same time for 10, 40 and 80 candidates.
"""

P = ParamSpec("P")
T = TypeVar("T")

Found = tuple[int, int, float]
"""``(vec_key, record key, cosine)``."""


def begin_nearest(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    space: Space = MEMORY,
    ef: int | None = None,
    exact_first: int = 0,
    candidates: tuple[str, Sequence[Any]] | None = None,
    *,
    overlap: bool,
) -> Callable[[], list[Found]]:
    """Start the search for the ``k`` best admitted vectors; the returned call gives them.

    The hits are at most ``cap`` per record, best first. The cap is applied
    while selecting, before the top-``k`` cut, so one record with many
    vectors cannot crowd out the others; ``cap=1`` is the memory search (a
    memory counts once, under its best chunk). The first ``exact_first``
    hits are the best by exact float32 cosine, in that order and with those
    cosines (:func:`rescored`); the hits after them keep the graph's.

    ``candidates`` is a query of memory keys read from an index that holds
    every memory ``condition`` admits
    (:func:`~embedmind.backend.sqlite.selection_sql.compile_candidates`): when
    it yields at most :data:`EXACT_ADMITTED` keys, those memories are scored
    exactly and nothing else is read, so a selective filter costs what it
    admits, not what the store holds.

    With ``overlap``, the first graph search runs on a worker thread
    (:mod:`~embedmind.backend.sqlite.workers`) until the call, so the
    caller's own work in between (a hybrid recall's text channel) runs
    beside it. Without, everything runs in the call. While a bulk load feeds
    the index (:attr:`~embedmind.backend.sqlite.hnsw.VectorIndex.feeding`),
    the first search runs at once, in the hold of the index lock the sync
    waited for. Every use of ``conn`` stays on the calling thread: the index
    is brought up to the snapshot here, the rest in the call.
    """
    if candidates is not None and few(conn, candidates, EXACT_ADMITTED):
        return lambda: among(conn, index, query, condition, candidates, k, cap, space, exact_first)
    feeding = index.feeding
    with index.held() if feeding else contextlib.nullcontext():
        tail = index.sync_for_search(conn)
        size = len(index) + len(tail[0])
        if size == 0:
            return list
        breadth = ef if ef is not None else default_ef(size)
        pool = max(4 * k, POOL_MIN)
        # The first pool's graph search. Beside a bulk load, made now in the
        # hold the sync waited for: asking for the lock again waited out another
        # of the load's chunks (a quarter of a reader's time beside a 100k load).
        # Else started now on a worker, or made in the call.
        start = _now if feeding else workers.soon if overlap else _later
        first = start(index.search, query, pool, breadth)

    def finish() -> list[Found]:
        return _settled(
            conn, index, query, condition, k, cap, space, exact_first, tail,
            first, size=size, breadth=breadth, pool=pool,
        )  # fmt: skip

    return finish


def _now(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Callable[[], T]:
    """``call(*args, **kwargs)``, made at once; the returned call gives its result."""
    result = call(*args, **kwargs)
    return lambda: result


def _later(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Callable[[], T]:
    """``call(*args, **kwargs)``, made when its result is asked for."""
    return functools.partial(call, *args, **kwargs)


def _settled(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    space: Space,
    exact_first: int,
    tail: Tail,
    first: Callable[[], tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]],
    *,
    size: int,
    breadth: int,
    pool: int,
) -> list[Found]:
    """Widen the pool from ``first``'s search of it until ``k`` admitted hits are settled."""
    searched = first()
    while True:
        vec_keys, sims = with_tail(searched, tail, query, pool)
        owners = index.owners.owners(conn, vec_keys, space)
        order = np.lexsort((vec_keys, -sims))
        found, wanted, admitted = admitted_prefix(
            conn, (vec_keys[order], owners[order], sims[order]), condition, k, cap,
            exact=exact_first, spare=True,
        )  # fmt: skip
        chosen = select(found, wanted, cap)
        # A search that gave every vector missed none: what it admitted is all
        # there is. Scoring them exactly instead would order near-ties by
        # other cosines than a smaller k's search, so a smaller k would not be
        # the beginning of this one.
        settled = len(chosen) >= wanted or len(vec_keys) >= size
        if settled and not exact_first:
            return chosen[:k]
        if settled:
            return rescored(conn, index.dims, query, found, k, cap, space, exact_first)
        if size * admitted <= EXACT_ADMITTED or pool >= size or pool >= EXACT_AFTER:
            # Few admitted vectors (or the graph gave fewer than it holds):
            # score all of them exactly rather than miss any.
            return exact(conn, index.dims, query, condition, k, cap, space)
        pool = min(size, max(pool * 4, int(4 * k / max(admitted, 1e-9))))
        searched = index.search(query, pool, breadth)


def few(conn: apsw.Connection, candidates: tuple[str, Sequence[Any]], limit: int) -> bool:
    """Whether the candidate query yields at most ``limit`` keys (reading at most ``limit + 1``)."""
    sql, params = candidates
    row = conn.execute(f"SELECT count(*) FROM ({sql} LIMIT ?)", (*params, limit + 1)).fetchone()
    return row is not None and int(row[0]) <= limit


def among(
    conn: apsw.Connection,
    index: VectorIndex,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    candidates: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    space: Space = MEMORY,
    exact_first: int = 0,
) -> list[Found]:
    """The top ``k`` of the candidate memories the condition admits, as :func:`exact` finds them.

    Every candidate vector is ranked by its graph copy (the vec_keys come
    from the vector table's key index, the vectors from memory, so no vector
    row is read); the condition is checked best first, a growing prefix at a
    time, until ``k`` pass and every candidate that could still overtake the
    ``k``-th once exact has been checked; those few are scored exactly from
    their float32 rows (:func:`rescored`: the first ``exact_first`` hits, or
    all ``k`` when it is 0). A filter admitting 1,000 of 100k memories thus
    reads about 1,000 index entries and a few dozen rows.
    """
    index.sync_for_search(conn)  # what the graph lacks is read below
    sql, params = candidates
    rows = conn.execute(
        f"SELECT vec_key, key FROM {space.table} WHERE key IN ({sql}) ORDER BY vec_key", params
    ).fetchall()
    if not rows:
        return []
    vec_keys = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    owners = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    sims = _graph_cosines(conn, index, vec_keys, query, space)
    order = np.lexsort((vec_keys, -sims))  # best first, ties by vec_key
    ranked = (vec_keys[order], owners[order], sims[order])
    exact = exact_first or k  # both clamp it to the hits they settle
    found, _, _ = admitted_prefix(conn, ranked, condition, k, cap, exact=exact)
    return rescored(conn, index.dims, query, found, k, cap, space, exact)


def _graph_cosines(
    conn: apsw.Connection,
    index: VectorIndex,
    vec_keys: npt.NDArray[np.int64],
    query: npt.NDArray[np.float32],
    space: Space,
) -> npt.NDArray[np.float32]:
    """Cosines of ``vec_keys`` from the graph's copies; the rows it lacks are read from SQLite."""
    copies = index.vectors(vec_keys)
    absent = [i for i, row in enumerate(copies) if row is None]
    filler = np.zeros(index.dims, np.float32)
    vectors = np.stack([filler if row is None else row for row in copies]).astype(np.float32)
    if absent:  # a bulk load's tail not added yet
        loaded_keys, _, loaded = vector_rows.load(
            conn, vec_keys[absent].tolist(), index.dims, space
        )
        at = {v: i for i, v in enumerate(loaded_keys.tolist())}
        for i in absent:
            if int(vec_keys[i]) in at:
                vectors[i] = loaded[at[int(vec_keys[i])]]
    return cosines(vectors, query)


def with_tail(
    hits: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]],
    tail: Tail,
    query: npt.NDArray[np.float32],
    count: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The graph's hits merged with the exactly scored vectors it does not hold yet, best first.

    The tail is what a bulk load has committed but not added to the graph yet
    (:meth:`~embedmind.backend.sqlite.hnsw.VectorIndex.sync_for_search`); a
    vector the load added meanwhile is counted once.
    """
    tail_keys, tail_vectors = tail
    if not len(tail_keys):
        return hits
    vec_keys, sims = hits
    graph_only = ~np.isin(vec_keys, tail_keys)
    keys = np.concatenate((vec_keys[graph_only], tail_keys))
    scores = np.concatenate((sims[graph_only], cosines(tail_vectors, query)))
    order = np.lexsort((keys, -scores))[:count]
    return keys[order], scores[order].astype(np.float32)


Arrays = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]
"""``(vec_keys, record keys, cosines)``, row for row."""


def admitted_prefix(
    conn: apsw.Connection,
    candidates: Arrays,
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    *,
    exact: int = 0,
    spare: bool = False,
) -> tuple[list[Found], int, float]:
    """The admitted candidates of the shortest best-first prefix that settles the top ``k``.

    ``candidates`` are sorted best first, equal cosines by vec_key (a deeper
    search may meet tied vectors in another order, and the first ones must
    not change). The condition is checked on a growing prefix, a statement
    per step, so an unfiltered search reads the rows of about ``k``
    candidates rather than of its whole pool: each check is a B-tree lookup
    of a memory row, a random read at a million memories. Until ``wanted``
    hits are found the prefix grows fourfold per step; from then on the
    first ``wanted`` are settled (a later candidate never ranks above an
    earlier one), and only the candidates within :data:`RESCORE_MARGIN`
    below the ``exact``-th hit are still checked — what rescoring could lift
    past it (none without rescoring, where the order is final) — in one last
    step. The first step already holds those that would be, were every
    candidate admitted, so an unfiltered search checks in one statement.
    Plain Python over the pool: it is usually a few dozen candidates, where
    each numpy call costs more than the work.

    Args:
        conn: The read session's connection.
        candidates: ``(vec_keys, owners, cosines)`` best first; an owner of
            :data:`~embedmind.backend.sqlite.vector_owners.UNKNOWN` is never admitted.
        condition: The selection's SQL condition over ``memories m``.
        k: Hits to settle.
        cap: Hits per record at most (``None``: no cap).
        exact: How many of the first hits :func:`rescored` makes exact (0:
            none, and the graph's order is final).
        spare: Once a candidate fails, want ``2k`` hits, so the ``k``-th sits
            well inside a graph search's pool, where the search is reliable.

    Returns:
        The admitted candidates checked, best first; the hits wanted (``k``,
        or ``2k`` with ``spare`` once one failed); the share of the checked
        candidates admitted.
    """
    rows = list(zip(*(a.tolist() for a in candidates), strict=True))
    seen: set[int] = {UNKNOWN}
    passing: set[int] = set()
    found: list[Found] = []
    checked, wanted = 0, k
    step = growth = k + max(4, k // 4)
    if exact and len(rows) >= min(k, exact):
        # What the last step would read if every candidate passes (the usual
        # case), read in the first: one statement instead of two.
        last = min(k, exact) - 1
        step = max(step, last + 1 + len(_near(rows[last + 1 :], rows[last])))
    while checked < len(rows):
        chunk = rows[checked : checked + step]
        fresh = {owner for _, owner, _ in chunk} - seen
        seen |= fresh
        passing |= records.keys_passing(conn, sorted(fresh), *condition)
        kept = [row for row in chunk if row[1] in passing]
        found += kept
        if spare and len(kept) < len(chunk):
            wanted = 2 * k
        checked += len(chunk)
        top = select(found, wanted, cap)
        if len(top) < wanted:
            growth *= 4
            step = growth
            continue
        if not exact:
            break
        step = len(_near(rows[checked:], top[min(wanted, exact) - 1]))
        if not step:
            break
    return found, wanted, len(found) / max(1, checked)


def _near(ordered: Sequence[Found], hit: Found) -> list[Found]:
    """The first of ``ordered`` (best first) that rescoring could lift past ``hit``.

    Those whose graph cosine is within :data:`RESCORE_MARGIN` below ``hit``'s.
    """
    floor = hit[2] - RESCORE_MARGIN
    return list(itertools.takewhile(lambda h: h[2] >= floor, ordered))


def select(ordered: Iterable[Found], k: int, cap: int | None) -> list[Found]:
    """The first ``k`` of ``ordered`` (best first) with at most ``cap`` per record."""
    # A plain dict: a Counter answers each new record through a Python-level
    # __missing__, and this runs several times per vector search.
    taken: dict[int, int] = {}
    out: list[Found] = []
    for hit in ordered:
        count = taken.get(hit[1], 0)
        if cap is not None and count >= cap:
            continue
        taken[hit[1]] = count + 1
        out.append(hit)
        if len(out) == k:
            break
    return out


def exact(
    conn: apsw.Connection,
    dims: int,
    query: npt.NDArray[np.float32],
    condition: tuple[str, Sequence[Any]],
    k: int,
    cap: int | None,
    space: Space = MEMORY,
) -> list[Found]:
    """Score every admitted vector exactly, then select with the cap."""
    vec_keys, keys, vectors = vector_rows.of_memories(conn, condition[0], condition[1], dims, space)
    if not len(vec_keys):
        return []
    sims = cosines(vectors, query)
    order = np.lexsort((vec_keys, -sims))  # best first, ties by vec_key
    ordered = zip(vec_keys[order].tolist(), keys[order].tolist(), sims[order].tolist(), strict=True)
    return select(ordered, k, cap)


def rescored(
    conn: apsw.Connection,
    dims: int,
    query: npt.NDArray[np.float32],
    ordered: Sequence[Found],
    k: int,
    cap: int | None,
    space: Space = MEMORY,
    exact_first: int | None = None,
) -> list[Found]:
    """The best ``k`` of ``ordered`` (graph cosines, best first) under the cap, the first exact.

    The first ``exact_first`` hits (all ``k`` when ``None``) are the best by
    float32 cosine, in that order and with those cosines; the rest follow in
    the graph's order. Only the candidates that could reach those places once
    exact are read back — those within :data:`RESCORE_MARGIN` of the last
    one's graph cosine, in one SELECT of about ``exact_first`` rows — so they
    are the ones rescoring every candidate would give, and a smaller
    ``exact_first`` gives the beginning of a larger one's. Equal exact cosines
    keep the graph's order.
    """
    exact_k = k if exact_first is None else min(exact_first, k)
    top = select(ordered, exact_k, cap)
    if not top:
        return []
    near = _near(ordered, top[-1])
    vec_keys, _, vectors = vector_rows.load(conn, [v for v, _, _ in near], dims, space)
    sims = dict(zip(vec_keys.tolist(), cosines(vectors, query).tolist(), strict=True))
    scored = [(v, key, sims[v]) for v, key, _ in near if v in sims]
    head = select(sorted(scored, key=lambda h: -h[2]), exact_k, cap)
    if exact_k == k:
        return head
    taken = {v for v, _, _ in head}
    return select(itertools.chain(head, (h for h in ordered if h[0] not in taken)), k, cap)


def cosines(
    vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Cosines of unit ``vectors`` (rows) with the unit ``query``, in float32.

    Each row's cosine is the same whatever rows it is computed beside: a
    BLAS matrix-vector product sums a row in an order that depends on the
    batch's size, so a memory scored among 14 rows and among 29 differed in
    its last bit, and its score depended on ``k``. ``einsum`` sums every row
    alike: about 2x slower than BLAS on the dozen rows a query rescores
    (2.0 against 0.9 us for 15 rows of 384), 3x on 5,000.
    Clipped to ``[-1, 1]``: float32 round-off takes a vector's cosine with
    itself about 1e-7 past 1.
    """
    dots = np.einsum("ij,j->i", vectors, query.astype(np.float32))
    sims: npt.NDArray[np.float32] = np.clip(dots, -1.0, 1.0)
    return sims


def cosines_of(
    conn: apsw.Connection, dims: int, query: npt.NDArray[np.float32], keys: Sequence[int]
) -> dict[int, float]:
    """Best-chunk cosine of each given memory to ``query`` (memories without vectors omitted)."""
    _, owners, vectors = vector_rows.of_keys(conn, keys, dims)
    best: dict[int, float] = {}
    for key, sim in zip(owners.tolist(), cosines(vectors, query).tolist(), strict=True):
        best[key] = max(sim, best.get(key, -1.0))
    return best
