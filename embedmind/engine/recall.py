"""Recall: run the channels under one selection, fuse, and build hits.

Recall works on a backend's read session only (:class:`~embedmind.backend.protocol.ReadSession`):
it never sees SQL or a connection. Both channels see the same
:class:`~embedmind.query.Selection`, so a memory is a
candidate in one exactly when it may be in the other. Hybrid recall fuses the
channels' first :data:`FUSION_DEPTH` candidates with RRF (constant
:data:`FUSION_RRF_K`, a union) whatever ``k`` is, so ``recall(q, k=j)`` is
always the beginning of ``recall(q, k=n)``; ``recency`` adds the candidates
ordered by ``created_at`` as a third list, which can only reorder memories
the content channels found; ``rerank_alpha`` reranks the same lexical pool by
vector similarity in one of the episodic seed's three modes. A missing
channel (no embedder, no vectors) degrades to the other and says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from embedmind import evidence, latest_value
from embedmind.backend.protocol import ReadSession
from embedmind.backend.values import VectorHit
from embedmind.checks import an_int, finite_number
from embedmind.errors import InvalidInputError
from embedmind.fusion import fusion_depths, prefix_stable, rrf, tied_ranks
from embedmind.model import ChannelScore, Hit, Memory, Mode, Recall
from embedmind.query.selection import Selection
from embedmind.query_dates import Window
from embedmind.rerank import rerank

TEXT, VECTOR, RECENCY, DATES, LATEST = "text", "vector", "recency", "dates", "latest"
FUSION_DEPTH = 20
"""Candidates each channel contributes to fusion (and the rerank pool), whatever ``k``.

Chosen with :data:`FUSION_RRF_K` on the LoCoMo development split
(``python -m embedmind_bench.locomo_tuning``, ``docs/benchmarks.md``):
with RRF 1, recall@10 is flat from depth 20 to 100 (0.663-0.667 without
session context, 0.728-0.731 with it), and 20 costs what the old ``2k`` did
at ``k = 10`` (depth 40 measured +0.6 ms p50). A depth tied to ``k`` made the
first hit depend on ``k``; past ``k = 20`` the depth doubles in tiers
(:func:`embedmind.fusion.prefix_stable`).
"""
RERANK_DEPTH = 40
"""The lexical pool ``rerank_alpha`` reranks, whatever ``k`` (it was ``4k``: 40 at ``k = 10``)."""
FUSION_RRF_K = 1
"""The RRF constant recall fuses with (Cormack et al.'s 60 flattened the ranks too much here)."""


@dataclass(frozen=True)
class Request:
    """One recall, validated."""

    query: str
    k: int
    mode: Mode
    selection: Selection
    recency: bool = False
    rerank_alpha: float | None = None
    ef_search: int | None = None
    expand_related: bool = False
    rrf_k: int = FUSION_RRF_K
    windows: tuple[Window, ...] = ()
    """Time windows of dates the query names (:func:`embedmind.query_dates.windows`)."""
    widen: bool = False
    """Add the key-term sub-queries' candidates to the lexical list (:mod:`.lexical.widening`)."""
    latest: bool = False
    """Put the result's cluster newest first when the query asks for a current value."""

    def __post_init__(self) -> None:
        """Refuse an RRF constant or a ``rerank_alpha`` that cannot rank anything.

        Raises:
            InvalidInputError: When ``rrf_k`` is not an int within 0-10,000.
            InvalidInputError: When ``rerank_alpha`` is not finite (an infinite
                blend weight makes every score NaN) or is given with
                ``mode="vector"`` (it reranks the lexical list, which vector
                mode does not compute).
        """
        an_int(self.rrf_k, "rrf_k", low=0, high=10_000)
        if self.rerank_alpha is None:
            return
        finite_number(self.rerank_alpha, "rerank_alpha")
        if self.mode is Mode.VECTOR:
            raise InvalidInputError(
                "rerank_alpha",
                "applies to hybrid and text modes (it reranks the lexical list by vector "
                "similarity); drop it or use mode='hybrid'",
            )


@dataclass
class Timer:
    """Per-phase wall times in milliseconds, for ``explain=True``."""

    phases: dict[str, float] = field(default_factory=dict)
    _started: float = field(default_factory=time.perf_counter)

    def lap(self, phase: str) -> None:
        """Record the time since the previous lap under ``phase``."""
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + (now - self._started) * 1000
        self._started = now


class Rows:
    """The memories one recall reads, each loaded once from its session.

    Dates, latest value, recency and the hits all need memories of the same
    candidates; each used to load its own (a temporal query read the fused
    candidates once per depth tier, then the hits again). All reads are in
    the one read session, so a memory loaded once is the one a later load gives.
    """

    def __init__(self, session: ReadSession) -> None:
        self._session = session
        self._found: dict[int, Memory] = {}
        self._asked: set[int] = set()

    def load(self, keys: Sequence[int]) -> dict[int, Memory]:
        """The memories of ``keys`` (those that exist), loading only the ones not read yet."""
        missing = [key for key in dict.fromkeys(keys) if key not in self._asked]
        if missing:
            self._found.update(self._session.records.load(missing))
            self._asked.update(missing)
        return {key: self._found[key] for key in keys if key in self._found}


@dataclass(frozen=True)
class Ranked:
    """One channel's result: ``(key, raw score)`` best first."""

    channel: str
    items: list[tuple[int, float]]


def execute(
    session: ReadSession,
    query_vector: npt.NDArray[np.float32] | None,
    request: Request,
    timer: Timer,
) -> Recall:
    """Run ``request`` in ``session`` (``query_vector`` is ``None`` for a store without vectors)."""
    k, mode = request.k, request.mode
    rows = Rows(session)
    wants_vector = mode is not Mode.TEXT or request.rerank_alpha is not None
    can_vector = query_vector is not None
    degraded: list[str] = []
    if wants_vector and not can_vector:
        degraded.append("vector channel unavailable: the store has no embedder; used text only")
    depths = fusion_depths(k, FUSION_DEPTH if request.rerank_alpha is None else RERANK_DEPTH)
    depth = depths[-1]
    # The latest-value cluster is drawn from the first SPAN hits whatever k, so
    # rank at least that many and cut to k after reordering.
    wanted = max(k, latest_value.SPAN) if request.latest else k
    ranked: list[Ranked] = []
    lexical_at: Callable[[int], list[tuple[int, float]]] | None = None
    via: dict[int, str] = {}
    text_runs = mode is not Mode.VECTOR or not can_vector
    vector_hits: Callable[[], list[VectorHit]] | None = None
    exact_first = 0
    if can_vector and (mode is not Mode.TEXT) and request.rerank_alpha is None:
        assert query_vector is not None  # can_vector
        # Started before the text channel: a backend that can search its vectors
        # on another core (SQLite's graph) scores the text channel meanwhile.
        # Alone (vector mode) it runs when asked: a handoff would only add to it.
        # Vector mode reports the cosines themselves, so they must be the
        # exact ones whichever path found them (graph, tail or exact scan).
        # Alone, its answer is the channel's first `wanted` hits, so only those
        # are settled (each settled hit is a memory row checked, a random read
        # at a million) and read back; fused with recency or dates, every rank
        # counts.
        if mode is Mode.VECTOR:
            exact_first = depth if request.recency or request.windows else wanted
        vector_hits = session.channels.begin_vector_top(
            query_vector, request.selection, exact_first or depth, ef=request.ef_search,
            exact_first=exact_first, overlap=text_runs,
        )  # fmt: skip
        timer.lap(VECTOR)
    if text_runs:
        # Widening only changes what fusion or the rerank pool sees: a text-only
        # ranking is exact BM25 and every widened candidate scores below its pool.
        widening = request.widen and (mode is Mode.HYBRID or request.rerank_alpha is not None)
        if widening:
            found, widened, via = session.channels.text_widened(
                request.query, request.selection, depth, depths[0]
            )
            lexical_at = _widened_lists(found, widened)
            ranked.append(Ranked(TEXT, lexical_at(depth)))
        else:
            found = session.channels.text_top(request.query, request.selection, depth)
            ranked.append(Ranked(TEXT, found))
        timer.lap(TEXT)
    if vector_hits is not None:
        # Past `exact_first` the cosines are the graph's: not reported.
        hits = vector_hits()[: exact_first or None]
        found = [(hit.key, hit.cosine) for hit in hits]
        ranked.append(Ranked(VECTOR, found))
        timer.lap(VECTOR)
        if not found and not session.channels.vector_count():
            fallback = "nothing to search" if mode is Mode.VECTOR else "used text only"
            degraded.append(f"no vectors stored yet: {fallback}")
    scorer = Scorer(session, request.query, query_vector)
    if request.rerank_alpha is not None and can_vector:
        assert query_vector is not None  # can_vector
        lexical_list = ranked[0].items
        cosines = session.channels.cosines(query_vector, [key for key, _ in lexical_list])
        alpha = request.rerank_alpha
        pool = lexical_at or (lambda d: lexical_list[:d])
        reranked = prefix_stable(lambda d: rerank(pool(d), cosines, alpha, d), depths, wanted)
        # The rerank orders; the score stays the probability of the hit.
        raw = dict(lexical_list)  # ranked[0] holds lexical_at(depth) when widened
        scorer.prepare([key for key, _ in reranked])
        fused = [(key, scorer.hybrid(key, raw.get(key, 0.0))) for key, _ in reranked]
        ranked.append(Ranked(VECTOR, sorted(cosines.items(), key=lambda item: -item[1])))
    else:
        fused = fuse(rows, ranked, mode, depths, request, wanted, lexical_at, scorer)
    timer.lap("fuse")
    if request.latest and latest_value.asks_current(request.query):
        fused = _latest_first(rows, fused, ranked)
        timer.lap(LATEST)
    fused = fused[:k]
    if request.expand_related:
        fused += _one_hop(session, [key for key, _ in fused], request.selection)
        timer.lap("expand")
    result = build(rows, fused, ranked, mode, tuple(degraded), via)
    timer.lap("load")
    return result


def _one_hop(
    session: ReadSession, keys: list[int], selection: Selection
) -> list[tuple[int, float]]:
    """Neighbours of the hits that pass the same selection, score 0, not counted in k."""
    seen = set(keys)
    candidates: list[int] = []
    for key in keys:
        for edge in session.graph.edges(key):
            if edge.other not in seen:
                seen.add(edge.other)
                candidates.append(edge.other)
    if not candidates:
        return []
    admitted = session.records.admitted(candidates, selection)
    return [(key, 0.0) for key in candidates if key in admitted]


def _widened_lists(
    found: list[tuple[int, float]], widened: list[tuple[int, float]]
) -> Callable[[int], list[tuple[int, float]]]:
    """The lexical list at each depth: the primary's first ``depth`` and the widened, by score.

    The widened candidates were found against the primary's first
    :data:`FUSION_DEPTH` (whatever ``k``), so the list at a depth does not
    depend on ``k``; a stable sort keeps the primary's order among its ties,
    and a widened candidate after a primary one of equal score.
    """

    def at(depth: int) -> list[tuple[int, float]]:
        head = found[:depth]
        taken = {key for key, _ in head}
        extra = [item for item in widened if item[0] not in taken]
        return sorted([*head, *extra], key=lambda item: -item[1])

    return at


def _latest_first(
    rows: Rows, fused: list[tuple[int, float]], ranked: list[Ranked]
) -> list[tuple[int, float]]:
    # Post-retrieval: the cluster of the ranking, newest first (latest_value).
    head = fused[: latest_value.SPAN]
    memories = rows.load([key for key, _ in head])
    created = {key: memory.created_at.timestamp() for key, memory in memories.items()}
    reordered, members = latest_value.newest_first(head, created)
    if members:
        ranked.append(Ranked(LATEST, [(key, created[key]) for key in members]))
    return reordered + fused[latest_value.SPAN :]


class Scorer:
    """Each candidate's probability of relevance (:mod:`embedmind.evidence`) in one recall.

    The text ceiling and the dialog cosines are read once, in the recall's
    read session, for every candidate at once (:meth:`prepare`); a
    candidate's score then depends on the query and that candidate only.
    """

    def __init__(
        self, session: ReadSession, query: str, query_vector: npt.NDArray[np.float32] | None
    ) -> None:
        self._session = session
        self._query = query
        self._vector = query_vector
        self._ceiling: float | None = None
        self._models: evidence.Models | None = None
        self._cosines: dict[int, float] = {}
        self._asked: set[int] = set()

    @property
    def ceiling(self) -> float:
        """The largest BM25 any memory could reach for the query (read once)."""
        if self._ceiling is None:
            self._ceiling = self._session.channels.text_ceiling(self._query)
        return self._ceiling

    @property
    def models(self) -> evidence.Models:
        """The models fitted for the store's index setting (read once)."""
        if self._models is None:
            self._models = evidence.models(self._session.sessions.dates_enabled())
        return self._models

    def prepare(self, keys: Sequence[int]) -> None:
        """Read the dialog cosines of ``keys`` not read yet (their vectors and neighbours')."""
        missing = [key for key in dict.fromkeys(keys) if key not in self._asked]
        if not missing or self._vector is None:
            return
        self._asked.update(missing)
        links = self._session.sessions.neighbours(missing)
        around = {o for pair in links.values() for o in pair if o is not None}
        vectors = self._session.channels.memory_vectors([*missing, *sorted(around - {*missing})])
        self._cosines.update(evidence.dialog_cosines(self._vector, missing, vectors, links))

    def dialog_cosine(self, key: int) -> float:
        """The candidate's dialog cosine (0 for a memory without a vector)."""
        return self._cosines.get(key, 0.0)

    def hybrid(self, key: int, bm25: float) -> float:
        """P(relevant) from both channels' evidence (:attr:`embedmind.evidence.Models.hybrid`)."""
        return self.models.hybrid.probability(bm25, self.ceiling, self.dialog_cosine(key))

    def alone(self, found: Ranked) -> list[tuple[int, float]]:
        """One channel's list in its own order, each raw score mapped to P(relevant).

        Text: :attr:`embedmind.evidence.Models.text` of the BM25; vector:
        :attr:`embedmind.evidence.Models.vector` of the cosine. Each model is
        increasing in its one feature (for this query), so the channel's order
        and its ties are kept; the raw score stays in the hit's channels.
        """
        if found.channel == VECTOR:
            # The vector channel never sees date words: no read of the switch.
            model = evidence.WITHOUT_DATES.vector
            return [(key, model.probability(0.0, 0.0, raw)) for key, raw in found.items]
        ceiling = self.ceiling if found.items else 0.0
        model = self.models.text
        return [(key, model.probability(raw, ceiling, 0.0)) for key, raw in found.items]

    def ranked(
        self, text: Sequence[tuple[int, float]], vector: Sequence[tuple[int, float]]
    ) -> list[tuple[int, float]]:
        """The union of both lists by probability; ties by the evidence, then write order."""
        bm = dict(text)
        keys = list(dict.fromkeys([*(key for key, _ in text), *(key for key, _ in vector)]))
        self.prepare(keys)
        ceiling = self.ceiling
        scored = []
        for key in keys:
            raw = bm.get(key, 0.0)
            cos = self.dialog_cosine(key)
            evidence_sum = (raw / ceiling if ceiling > 0 else 0.0) + cos
            scored.append((-self.hybrid(key, raw), -evidence_sum, key))
        scored.sort()
        return [(key, -p) for p, _, key in scored]


def fuse(
    rows: Rows,
    ranked: list[Ranked],
    mode: Mode,
    depths: Sequence[int],
    request: Request,
    wanted: int,
    lexical_at: Callable[[int], list[tuple[int, float]]] | None = None,
    scorer: Scorer | None = None,
) -> list[tuple[int, float]]:
    """Combine channel results into ``(key, score)`` best first, at most ``wanted``.

    Hybrid with both channels: the candidates within ``depth`` of either
    list, each scored by its probability of relevance (:class:`Scorer`), the
    depths tiered by :func:`prefix_stable` so that the result never depends
    on ``k`` beyond being cut at it. One channel: its own order, the score its
    probability from that channel alone (:meth:`Scorer.alone`). ``recency``
    (the candidates newest first) and date windows
    (the candidates inside a window the query names) are fused with that
    ranking by RRF (constant ``request.rrf_k``, the ranking counting twice, as
    the two content lists did): they reorder, and each hit keeps its
    probability as its score. ``lexical_at`` gives the text list at a depth
    when widening extends it.
    """
    lists = [r.items for r in ranked]
    both = len(lists) == 2 and scorer is not None

    def content(depth: int) -> list[tuple[int, float]]:
        cut = [items[:depth] for items in lists]
        if lexical_at is not None:
            cut[0] = lexical_at(depth)
        if both:
            assert scorer is not None  # both
            return scorer.ranked(cut[0], cut[1])
        if scorer is not None:
            return scorer.alone(Ranked(ranked[0].channel, cut[0]))
        return cut[0]

    def at(depth: int) -> list[tuple[int, float]]:
        order = content(depth)
        if not request.recency and not request.windows:
            return order
        cut = [items[:depth] for items in lists]
        weighted = [order] * len(cut)  # as many votes as content lists, as before
        extra = [_by_recency(rows, cut)] if request.recency else []
        if request.windows:
            extra.append(_dated(rows, rrf([*weighted, *extra], request.rrf_k), request.windows))
        score = dict(order)
        return [(key, score[key]) for key, _ in rrf([*weighted, *extra], request.rrf_k)]

    if request.recency:
        ranked.append(Ranked(RECENCY, _by_recency(rows, lists)))
    if request.windows:
        ranked.append(Ranked(DATES, _dated(rows, at(depths[-1]), request.windows)))
    if mode is not Mode.HYBRID and len(ranked) == 1:
        first = Ranked(ranked[0].channel, ranked[0].items[:wanted])
        return first.items if scorer is None else scorer.alone(first)
    return prefix_stable(at, depths, wanted)


def _dated(
    rows: Rows, fused: Sequence[tuple[int, float]], windows: Sequence[Window]
) -> list[tuple[int, float]]:
    # The fused candidates created within a window the query names, in their
    # fused order: one more list that moves them up, never a new memory.
    memories = rows.load([key for key, _ in fused])
    inside = [
        key
        for key, _ in fused
        if key in memories and any(lo <= memories[key].created_at < hi for lo, hi in windows)
    ]
    return [(key, 1.0 / rank) for rank, key in enumerate(inside, start=1)]


def _by_recency(
    rows: Rows, lists: Sequence[Sequence[tuple[int, float]]]
) -> list[tuple[int, float]]:
    # The union of what the content channels found, newest first: recency can
    # reorder these candidates but never introduce one.
    union = list(dict.fromkeys(key for items in lists for key, _ in items))
    memories = rows.load(union)
    stamps = {key: memories[key].created_at.timestamp() for key in union if key in memories}
    return sorted(stamps.items(), key=lambda item: (-item[1], item[0]))


def build(
    rows: Rows,
    fused: list[tuple[int, float]],
    ranked: Sequence[Ranked],
    mode: Mode,
    degraded: tuple[str, ...],
    via: Mapping[int, str] | None = None,
) -> Recall:
    """Load the memories of the fused keys and assemble the :class:`Recall`.

    ``via`` names, per widened key, the key term whose sub-query brought it in.
    """
    memories = rows.load([key for key, _ in fused])
    raw_scores = [dict(r.items) for r in ranked]
    positions = {
        r.channel: {key: (rank, raw[key]) for key, rank in tied_ranks(r.items)}
        for r, raw in zip(ranked, raw_scores, strict=True)
    }
    hits = []
    for rank, (key, score) in enumerate(fused, start=1):
        channels = {
            name: ChannelScore(*found[key]) for name, found in positions.items() if key in found
        }
        if via and key in via and TEXT in channels:
            channels[TEXT] = ChannelScore(*positions[TEXT][key], via_widening=(via[key],))
        hits.append(Hit(memories[key], score, rank, channels))
    return Recall(tuple(hits), mode, tuple(r.channel for r in ranked), degraded, None)


def with_timings(result: Recall, timings: Mapping[str, float]) -> Recall:
    """The same result, carrying per-phase timings."""
    return Recall(result.hits, result.mode, result.channels, result.degraded, dict(timings))


def reordered(result: Recall, hits: Sequence[Hit]) -> Recall:
    """The same result with its hits in a new order (a plugin's rerank), ranks renumbered."""
    renumbered = tuple(Hit(h.memory, h.score, i, h.channels) for i, h in enumerate(hits, start=1))
    return Recall(renumbered, result.mode, result.channels, result.degraded, result.timings)


def at_least(result: Recall, threshold: float) -> Recall:
    """The same result without the hits scoring below ``threshold`` (ranks kept: a filter)."""
    hits = tuple(hit for hit in result.hits if hit.score >= threshold)
    return Recall(hits, result.mode, result.channels, result.degraded, result.timings)
