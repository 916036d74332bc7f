"""Writes: remember (single, detailed, many), forget, delete.

Input is validated and embedded before any transaction; each batch is one
transaction of the commit path (:mod:`embedmind.engine.commit`), which evicts,
saves the indexes when due, counts, notifies listeners and derives fragments;
the rows are applied by :mod:`embedmind.engine.apply`. A transaction that a
concurrent writer rolled back (:func:`embedmind.engine.commit.retrying`) runs again.
"""

from __future__ import annotations

import datetime as _dt
import gc
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from tqdm.auto import tqdm

from embedmind import batch_drafts, drafts
from embedmind.backend import readers
from embedmind.backend.protocol import ReadSession
from embedmind.checks import an_int
from embedmind.embedders.adapt import normalized_one
from embedmind.embedders.protocol import Embedder
from embedmind.engine import apply, batch_sizes
from embedmind.engine.commit import Committed, changed, emit, retrying
from embedmind.engine.state import Engine
from embedmind.errors import InvalidInputError
from embedmind.ids import validate_id
from embedmind.model import Draft, Memory, Remembered, SimilarMemory, Tier
from embedmind.query.selection import Selection
from embedmind.timestamps import resolve_now
from embedmind.vectors.embedding import Embedded, embed_contents

logger = logging.getLogger(__name__)

NEAR_DUP_THRESHOLD = 0.80
"""Cosine at or above which an existing memory is reported as a near duplicate.

The engine seed measured it: unrelated pairs sit at p99 = 0.639, restatements
of one fact at p5 = 0.840; at 0.80 98.5 % of duplicates are caught and 0.10 %
of unrelated pairs flagged. The hint informs and never blocks, so a rare
false alarm is the cheap side of the trade."""
NEAR_DUP_LIMIT = 5
NEAR_DUP_SNIPPET = 160
MAX_DRAFTS = 10_000_000
YIELD_EVERY = 50
"""Drafts :func:`_prepare_all` validates between two sleeps of :data:`YIELD_SECONDS`
while a read session is open in the process (:mod:`embedmind.backend.readers`).

Validating is pure Python on the calling thread, about a second for 100,000
drafts. A reader on another thread gives up the GIL at each SQLite step and
then waits up to the switch interval (5 ms) to get it back, so one hybrid
recall beside the validation took 390-677 ms. (Beside 150,000 drafts validated
alone, the reader's worst took 334-415 ms; with a switch interval of 0.5 ms,
141-234 ms; with these sleeps, 59-173 ms.) Sleeping 0.1 ms every 50
drafts (about 0.6 ms of work) lets it through: its worst took 150-164 ms, as
beside the rest of the load, at the same load rate (``ingest_contention``
at 100k, two rounds each). With no reader there it does not sleep: each
sleep took 177 µs on this machine class: 0.35 s for 100k drafts, beside 6-8 s
for a 100k text-only load."""
YIELD_SECONDS = 0.0001
_WARNED = "warned_vectorless"


def remember(engine: Engine, draft: Draft, dedup: str | None, now: _dt.datetime | None) -> Memory:
    """Store one memory (or, with ``dedup="exact"``, return its live twin)."""
    if dedup is not None:
        if dedup != "exact":
            raise InvalidInputError("dedup", "expected None or 'exact'")
        twin = exact_twin(engine, draft, now)
        if twin is not None:
            emit(engine.metrics, "dedup_hit")
            return twin
    return remember_many(engine, [draft], now=now)[0]


def exact_twin(engine: Engine, draft: Draft, now: _dt.datetime | None) -> Memory | None:
    """The live memory of the draft's namespace and tier with the same normalised content."""
    prepared = drafts.prepare(draft, resolve_now(now))
    selection = Selection.of(prepared.created_at, prepared.namespace, tiers=[prepared.tier])
    with engine.backend.read() as session:
        return session.records.by_fingerprint(prepared.fingerprint, selection)


def find_by_fingerprint(
    engine: Engine,
    namespace: str,
    tier: Tier | str,
    content: str,
    *,
    now: _dt.datetime | None = None,
) -> Memory | None:
    """The live, current memory restating ``content`` exactly (after normalisation)."""
    return exact_twin(engine, Draft(content, namespace=namespace, tier=tier), now)


def remember_detailed(engine: Engine, content: str, **kwargs: Any) -> Remembered:
    """Like :meth:`remember`, and report near duplicates found with the same embedding."""
    now = kwargs.pop("now", None)
    try:
        draft = Draft(content, **kwargs)
    except TypeError as e:
        raise InvalidInputError("remember_detailed", str(e)) from None
    at = resolve_now(now)
    prepared = drafts.prepare(draft, at)
    engine.backend.check_memory(prepared)
    embedded = embed(engine, [prepared], [_given_vector(draft.vector, engine.embedder, 0)])
    similar: tuple[SimilarMemory, ...] = ()
    vectors = embedded[0]
    if vectors is not None and engine.embedder is not None:
        similar = _near_duplicates(engine, prepared.namespace, vectors, at)
    written, _ = commit_batch(engine, [prepared], embedded)
    return Remembered(written[0], similar)


def _near_duplicates(
    engine: Engine, namespace: str, vectors: Embedded, now: int
) -> tuple[SimilarMemory, ...]:
    """Live memories of ``namespace`` at cosine >= :data:`NEAR_DUP_THRESHOLD` to any chunk."""
    selection = Selection.of(now, namespace)
    best: dict[int, float] = {}
    with engine.backend.read() as session:
        for row in vectors.vectors:
            for hit in session.channels.vector_top(row, selection, NEAR_DUP_LIMIT):
                if hit.cosine >= NEAR_DUP_THRESHOLD and hit.cosine > best.get(hit.key, -1.0):
                    best[hit.key] = hit.cosine
        top = sorted(best.items(), key=lambda item: -item[1])[:NEAR_DUP_LIMIT]
        memories = session.records.load([key for key, _ in top])
    return tuple(
        SimilarMemory(
            memories[key].id, _snippet(memories[key].content), score, memories[key].created_at
        )
        for key, score in top
    )


def embed(
    engine: Engine, batch: Sequence[drafts.Prepared], given: Sequence[object | None]
) -> list[Embedded | None]:
    """Each record's vectors: the given one, else its content embedded (``None``: text only)."""
    if engine.embedder is None:
        if any(v is not None for v in given):
            raise InvalidInputError("vector", "the store was opened without an embedder")
        return [None] * len(batch)
    return list(embed_contents(engine.embedder, [p.content for p in batch], given))


def remember_many(
    engine: Engine,
    drafts_: Iterable[Draft | str | dict[str, Any]],
    *,
    batch_size: int | None = None,
    show_progress: bool = False,
    now: _dt.datetime | None = None,
) -> list[Memory]:
    """Store many memories: one transaction per batch (sized by :mod:`.batch_sizes`)."""
    if batch_size is not None:
        an_int(batch_size, "batch_size", low=1, high=batch_sizes.LARGEST)
    if isinstance(drafts_, str | bytes) or not isinstance(drafts_, Iterable):
        raise InvalidInputError("drafts", "expected an iterable of drafts")
    at = resolve_now(now)
    sizes = batch_sizes.BatchSizes(batch_size)
    with _collector_paused():
        prepared, given = _prepare_all(engine, drafts_, at)
        stored: list[Memory] = []
        bar = tqdm(total=len(prepared), disable=not show_progress, unit="memory")
        with bar, engine.commit.bulk(len(prepared)):
            for batch, embedded in _embedded_batches(engine, prepared, given, sizes):
                written, held_s = commit_batch(engine, batch, embedded)
                sizes.observe(len(batch), held_s)
                stored += written
                bar.update(len(batch))
    return stored


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk write, if it runs.

    A batch allocates tens of thousands of records, rows and memories, none
    of them in reference cycles, yet every allocation counts towards the next
    collection, and the full collections scan every live object: they took
    1-2 s of a 50k load's main thread, about a tenth. Reference counting still
    frees everything. Bulk writes on several threads share one pause: the
    collector resumes when the last of them returns or raises, and only if it
    was running when the first began.
    """
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


_pause_lock = threading.Lock()
_pauses = 0
"""Bulk writes under way in this process (:func:`_collector_paused`)."""
_resume = False
"""Whether the collector was running when the first of them began."""


def _prepare_all(
    engine: Engine, items: Iterable[Draft | str | dict[str, Any]], at: int
) -> tuple[list[drafts.Prepared], list[object | None]]:
    """Validate every draft, the given vectors as one matrix (:mod:`embedmind.batch_drafts`).

    The first invalid item raises, as if each were checked in turn: a draft's
    own fields before the vectors of the drafts after it.
    """
    prepared: list[drafts.Prepared] = []
    raw: list[object] = []  # the given vectors, checked together below
    where: list[int] = []
    try:
        for i, item in enumerate(items):
            if i >= MAX_DRAFTS:
                raise InvalidInputError("drafts", f"more than {MAX_DRAFTS} in one call")
            if i % YIELD_EVERY == YIELD_EVERY - 1 and readers.any_open():
                time.sleep(YIELD_SECONDS)  # see YIELD_EVERY
            draft = drafts.coerce_draft(item, i)
            prepared.append(drafts.prepare(draft, at))
            engine.backend.check_memory(prepared[-1])  # its own limits: before any batch
            if draft.vector is not None:
                if engine.embedder is None:
                    raise InvalidInputError(f"drafts[{i}].vector", "the store has no embedder")
                raw.append(draft.vector)
                where.append(i)
    except Exception:
        # An earlier draft's bad vector is the first error, as one by one.
        _check_given(engine, raw, where)
        raise
    given: list[object | None] = [None] * len(prepared)
    for i, row in zip(where, _check_given(engine, raw, where), strict=True):
        given[i] = row
    return prepared, given


def _check_given(engine: Engine, raw: list[object], where: list[int]) -> list[object]:
    if not raw:
        return []
    assert engine.embedder is not None  # checked while collecting
    return list(batch_drafts.unit_rows(raw, engine.embedder.dims, where))


def commit_batch(
    engine: Engine, batch: Sequence[drafts.Prepared], embedded: Sequence[Embedded | None]
) -> tuple[list[Memory], float]:
    """Write one batch in one transaction of the commit path (run again if it lost a race).

    Returns:
        The memories written, and how long the transaction held the writer lock (s).
    """

    def write() -> tuple[list[Memory], float]:
        with engine.commit.write() as tx:
            written = apply.apply_batch(tx.session, batch, embedded, tx.vectors_written)
            _warn_if_vectorless(engine, tx.session)
            tx.record(Committed("write", written=tuple(written)))
            closed = [t for p in batch for t in p.supersedes]
            if closed:  # the versions a supersede replaced left recall: report them
                found = tx.session.records.find_many(closed)
                keys = [found[t].key for t in closed if t in found]
                tx.record(Committed("supersede", updated=changed(tx.session.records, keys)))
        return written, tx.held_s

    return retrying(write)


def _embedded_batches(
    engine: Engine,
    prepared: list[drafts.Prepared],
    given: list[object | None],
    sizes: batch_sizes.BatchSizes,
) -> Iterator[tuple[list[drafts.Prepared], list[Embedded | None]]]:
    """Yield each batch with its vectors, embedding the next batch meanwhile.

    Each batch is cut when its embedding starts, at the size ``sizes`` gives
    then: with an embedder that is before the batch ahead of it is written.
    """

    def cut(start: int) -> slice:
        return slice(start, min(start + sizes.next(), len(prepared)))

    def embed_span(span: slice) -> list[Embedded | None]:
        return embed(engine, prepared[span], given[span])

    if engine.embedder is None or len(prepared) <= sizes.next():  # nothing to overlap
        span = cut(0)
        while span.start < len(prepared):
            yield prepared[span], embed_span(span)
            span = cut(span.stop)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedmind-embed") as pool:
        span = cut(0)
        pending = pool.submit(embed_span, span)
        while span.start < len(prepared):
            embedded = pending.result()
            ahead = cut(span.stop)
            if ahead.start < len(prepared):
                pending = pool.submit(embed_span, ahead)
            yield prepared[span], embedded
            span = ahead


def _warn_if_vectorless(engine: Engine, session: ReadSession) -> None:
    """Warn, once per open store, that a write without an embedder got no vector.

    A store that has a model gives every memory a vector; one opened with
    ``embedder=None`` cannot, and vector recall never finds what it writes.
    The write is still right to accept (a text-only client is legitimate),
    so this says it once rather than on every write.
    """
    if engine.embedder is not None or engine.caches.get(_WARNED):
        return
    model = session.meta.identity().get("model_id")
    if model is None:  # a text-only store: nothing is missing
        return
    engine.caches[_WARNED] = True
    logger.warning(
        "%s has vectors (model %s) but is open with embedder=None: memories written now "
        "get no vector and vector search will not find them; open it with its embedder, "
        "or fill them later with `embedmind reembed --missing`",
        engine.backend.path, model,
    )  # fmt: skip


def forget(engine: Engine, id: str, *, now: _dt.datetime | None = None) -> bool:
    """Tombstone a memory: it leaves every read; ``vacuum`` reclaims its space."""
    memory_id, at = validate_id(id), resolve_now(now)

    def write() -> bool:
        with engine.commit.write() as tx:
            forgotten = apply.forget(tx.session, memory_id, at)
            if forgotten:
                tx.record(Committed("forget", forgotten=(memory_id,)))
        return forgotten

    return retrying(write)


def delete(engine: Engine, id: str) -> bool:
    """Remove a memory at once (row, postings, tags)."""
    memory_id = validate_id(id)

    def write() -> bool:
        with engine.commit.write() as tx:
            deleted = apply.delete(tx.session, memory_id)
            if deleted:
                tx.record(Committed("delete", deleted=(memory_id,)))
        return deleted

    return retrying(write)


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
