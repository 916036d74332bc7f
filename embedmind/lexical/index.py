"""The BM25 inverted index: maintained in the record's transaction, scored with numpy.

Writes go through :meth:`LexicalIndex.add` and :meth:`LexicalIndex.remove`
inside the caller's write transaction, so postings always agree with the
records. Reads score every posting of the query terms exhaustively (so a
filter can never make the channel under-return) from a per-process cache of
decoded blocks that is revalidated against the block versions on each query.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.lexical import bm25
from embedmind.lexical.analyzer import analyze
from embedmind.lexical.blocks import BLOCK_SIZE, Postings, concat, make
from embedmind.storage import postings as store

CACHE_POSTINGS = 2_000_000
"""Postings kept decoded per cache level (about 14 bytes each)."""


@dataclass(frozen=True)
class Scored:
    """Every document matching at least one query term, with its BM25 score."""

    keys: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.keys.shape[0])


def query_terms(text: str) -> list[str]:
    """The distinct analysed terms of a query, in order."""
    return list(dict.fromkeys(analyze(text)))


class LexicalIndex:
    """BM25 postings of one store, plus this process's cache of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._terms: _LRU = _LRU(CACHE_POSTINGS)
        self._blocks: _LRU = _LRU(CACHE_POSTINGS)

    # -- writes (inside the caller's transaction) ---------------------------

    def add(self, conn: apsw.Connection, docs: Sequence[tuple[int, str]], version: int) -> None:
        """Index documents ``(key, content)`` whose keys are not indexed yet."""
        analysed = [(key, Counter(analyze(text))) for key, text in docs]
        analysed = [(key, counts) for key, counts in analysed if counts]
        if not analysed:
            return
        terms = {term for _, counts in analysed for term in counts}
        ids = {term: row.term_id for term, row in store.lookup_terms(conn, terms).items()}
        for term in sorted(terms - ids.keys()):
            ids[term] = store.create_term(conn, term, version)
        per_term: dict[int, tuple[list[int], list[int], list[int]]] = defaultdict(
            lambda: ([], [], [])
        )
        total = 0
        for key, counts in sorted(analysed):
            length = sum(counts.values())
            total += length
            pairs = [(ids[term], tf) for term, tf in counts.items()]
            store.put_doc(conn, key, length, pairs)
            for term_id, tf in pairs:
                keys, tfs, lengths = per_term[term_id]
                keys.append(key)
                tfs.append(tf)
                lengths.append(length)
        for term_id, (keys, tfs, lengths) in per_term.items():
            _insert(conn, term_id, make(keys, tfs, lengths), version)
            store.change_df(conn, term_id, len(keys), version)
        store.add_stats(conn, len(analysed), total)

    def remove(self, conn: apsw.Connection, key: int, version: int) -> None:
        """Drop a document's postings (a no-op when it is not indexed)."""
        doc = store.get_doc(conn, key)
        if doc is None:
            return
        length, term_ids, _ = doc
        for term_id in term_ids.tolist():
            block = store.block_for_key(conn, term_id, key)
            if block is None:  # pragma: no cover - lex_docs and blocks agree
                continue
            remaining = block.postings.without(key)
            if len(remaining):
                store.write_block(
                    conn, block.block_id, term_id, block.first_key, remaining, version
                )
            else:
                store.delete_block(conn, block.block_id)
            store.change_df(conn, term_id, -1, version)
        store.delete_doc(conn, key)
        store.add_stats(conn, -1, -length)

    # -- reads ---------------------------------------------------------------

    def score(self, conn: apsw.Connection, terms: Sequence[str]) -> Scored:
        """Score every document containing at least one of ``terms``."""
        empty = Scored(np.empty(0, np.int64), np.empty(0, np.float64))
        rows = store.lookup_terms(conn, terms)
        doc_count, total_length = store.stats(conn)
        if not rows or doc_count == 0:
            return empty
        avgdl = total_length / doc_count
        lists: list[tuple[Postings, npt.NDArray[np.float64]]] = []
        for row in rows.values():
            p = self._postings(conn, row)
            if len(p):
                idf = bm25.idf(row.df, doc_count)
                lists.append((p, bm25.term_scores(p.tfs, p.lengths, idf, avgdl)))
        return _accumulate(lists) if lists else empty

    def _postings(self, conn: apsw.Connection, row: store.TermRow) -> Postings:
        with self._lock:
            cached = self._terms.get(row.term_id, row.version)
        if cached is not None:
            return cached
        versions = store.block_versions(conn, row.term_id)
        with self._lock:
            parts = {b: self._blocks.get(b, v) for b, v in versions}
        missing = [b for b, p in parts.items() if p is None]
        loaded = store.load_blocks(conn, missing) if missing else {}
        merged = concat([parts[b] or loaded[b] for b, _ in versions])
        with self._lock:
            for b, v in versions:
                if b in loaded:
                    self._blocks.put(b, v, loaded[b])
            self._terms.put(row.term_id, row.version, merged)
        return merged

    def statistics(self, conn: apsw.Connection) -> tuple[int, int]:
        """``(indexed documents, dictionary terms)``."""
        return store.stats(conn)[0], store.term_count(conn)

    def clear_cache(self) -> None:
        """Drop every cached posting (after a vacuum or a rebuild)."""
        with self._lock:
            self._terms = _LRU(CACHE_POSTINGS)
            self._blocks = _LRU(CACHE_POSTINGS)


def _insert(conn: apsw.Connection, term_id: int, new: Postings, version: int) -> None:
    """Merge new postings (keys not yet in the term) into the term's blocks."""
    last = store.last_block(conn, term_id)
    if last is None or new.keys[0] > last.postings.keys[-1]:
        # Append: new documents get the largest keys, so this is the usual path.
        start = 0
        if last is not None and len(last.postings) < BLOCK_SIZE:
            start = BLOCK_SIZE - len(last.postings)
            merged = concat([last.postings, new.slice(0, start)])
            store.write_block(conn, last.block_id, term_id, last.first_key, merged, version)
        for chunk in _chunks(new, start):
            store.write_block(conn, None, term_id, int(chunk.keys[0]), chunk, version)
        return
    for i in range(len(new)):  # re-indexed old keys land between existing ones
        one = new.slice(i, i + 1)
        key = int(one.keys[0])
        block = store.block_for_key(conn, term_id, key)
        if block is None:  # pragma: no cover - last_block existed
            store.write_block(conn, None, term_id, key, one, version)
            continue
        merged = block.postings.merged(one)
        first_key = min(block.first_key, key)
        if len(merged) <= BLOCK_SIZE:
            store.write_block(conn, block.block_id, term_id, first_key, merged, version)
            continue
        half = len(merged) // 2
        store.write_block(conn, block.block_id, term_id, first_key, merged.slice(0, half), version)
        upper = merged.slice(half, len(merged))
        store.write_block(conn, None, term_id, int(upper.keys[0]), upper, version)


def _chunks(postings: Postings, start: int) -> Iterator[Postings]:
    for offset in range(start, len(postings), BLOCK_SIZE):
        yield postings.slice(offset, min(offset + BLOCK_SIZE, len(postings)))


def _accumulate(lists: list[tuple[Postings, npt.NDArray[np.float64]]]) -> Scored:
    """Sum per-term scores by document key."""
    if len(lists) == 1:
        p, s = lists[0]
        return Scored(p.keys, s)
    top = max(int(p.keys[-1]) for p, _ in lists) + 1
    total = sum(len(p) for p, _ in lists)
    acc = np.zeros(top, dtype=np.float64)  # calloc-backed: only touched pages cost
    for p, s in lists:
        acc[p.keys] += s  # keys are unique within one term
    if total * 16 < top:
        keys = np.unique(np.concatenate([p.keys for p, _ in lists]))
    else:
        seen = np.zeros(top, dtype=bool)
        for p, _ in lists:
            seen[p.keys] = True
        keys = np.flatnonzero(seen).astype(np.int64)
    return Scored(keys, acc[keys])


def best_first(scored: Scored, first: int) -> Iterator[npt.NDArray[np.int64]]:
    """Yield positions into ``scored`` in descending score order, in growing chunks.

    Ties break by ascending key. Only the part of the order a caller consumes is
    ever sorted, so a filter that is satisfied early costs a partial sort.
    """
    remaining = np.arange(len(scored))
    size = max(first, 1)
    while remaining.size:
        if remaining.size <= size:
            chosen = remaining
        else:
            part = np.argpartition(-scored.scores[remaining], size - 1)[:size]
            chosen = remaining[part]
        order = np.lexsort((scored.keys[chosen], -scored.scores[chosen]))
        yield chosen[order]
        if chosen.size == remaining.size:
            return
        keep = np.ones(len(scored), dtype=bool)
        keep[chosen] = False
        remaining = remaining[keep[remaining]]
        size *= 4


class _LRU:
    """Versioned LRU of decoded postings, bounded by total posting count."""

    def __init__(self, capacity: int) -> None:
        self._items: OrderedDict[int, tuple[int, Postings]] = OrderedDict()
        self._size = 0
        self._capacity = capacity

    def get(self, key: int, version: int) -> Postings | None:
        item = self._items.get(key)
        if item is None or item[0] != version:
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: int, version: int, value: Postings) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._size -= len(old[1])
        self._items[key] = (version, value)
        self._size += len(value)
        while self._size > self._capacity and len(self._items) > 1:
            _, (_, evicted) = self._items.popitem(last=False)
            self._size -= len(evicted)
