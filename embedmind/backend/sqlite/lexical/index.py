"""The BM25 inverted index: maintained in the record's transaction, scored with numpy.

Writes go through :meth:`LexicalIndex.add` and :meth:`LexicalIndex.remove`
inside the caller's write transaction, so postings always agree with the
records. Reads score the query terms' postings (:mod:`embedmind.lexical.maxscore`)
from a per-process cache of each term's decoded list, bounded by bytes
(:data:`CACHE_BYTES`), revalidated against the term's version on each query
and refreshed by reading only the blocks whose versions changed.
The store's alias table (:mod:`embedmind.lexical.aliases`) shapes both sides:
documents carry the expansions of the keys they hold, and a query's terms
gain the expansions of the keys it holds, at a reduced weight.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite import alias_rows, bulk_postings, postings, session_rows, workers
from embedmind.backend.sqlite.blocks import BLOCK_SIZE, Postings, concat
from embedmind.backend.sqlite.lexical import context
from embedmind.lexical import aliases, bm25, maxscore
from embedmind.lexical.aliases import Fields, Table, fields_many
from embedmind.lexical.analyzer import analyze
from embedmind.lexical.maxscore import TermList

CACHE_BYTES = 192 * 2**20
"""Decoded postings this process keeps per store, in bytes (:attr:`_Cached.nbytes`).

About 18 bytes a posting (key, tf, length and the precomputed impact), so
some 10M postings: every posting of a store of 800k short documents, and at a
million the terms a workload keeps asking for. The cache is filled only by
what queries read, so a small store's cache is the size of its postings;
past the bound, the least recently read terms are dropped. A fixed count of
2M postings (in two copies, blocks and whole terms) missed most lookups at
1M documents: 200 questions read 6.4M postings."""


@dataclass(frozen=True)
class Scored:
    """Every document matching at least one query term, with its BM25 score."""

    keys: npt.NDArray[np.int64]
    scores: npt.NDArray[np.floating[Any]]
    """float64 sums, or one term's float32 contributions (widening's sub-queries)."""

    def __len__(self) -> int:
        return int(self.keys.shape[0])


def query_terms(text: str) -> list[str]:
    """The distinct analysed terms of a query, in order."""
    return list(dict.fromkeys(analyze(text)))


@dataclass(frozen=True)
class Ahead:
    """Texts under analysis on a worker thread (:func:`analyse_ahead`)."""

    texts: Sequence[str]
    table: Table
    """The alias table they are analysed under."""
    result: Callable[[], list[Fields]]

    def fields_of(self, docs: Sequence[tuple[int, str]], table: Table) -> list[Fields] | None:
        """The fields of ``docs`` when they are these texts, in order, under ``table``."""
        if table is not self.table or len(docs) != len(self.texts):
            return None
        if any(text is not mine for (_, text), mine in zip(docs, self.texts, strict=True)):
            return None
        return self.result()


def analyse_ahead(table: Table, texts: Sequence[str]) -> Ahead:
    """Start analysing ``texts`` under ``table`` on a worker, for a :meth:`LexicalIndex.add`.

    The caller goes on with SQLite work meanwhile (a batch's row insert, one
    statement that holds no GIL), so the analysis, pure Python, takes the
    other core. ``table`` is :meth:`LexicalIndex.aliases` of the caller's transaction.
    """
    return Ahead(texts, table, workers.soon(fields_many, texts, table))


class LexicalIndex:
    """BM25 postings of one store, plus this process's cache of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._terms = _LRU(CACHE_BYTES)
        self._table: tuple[str, Table] = ("", aliases.EMPTY)
        self.tally = maxscore.Tally()
        """Blocks this process's text queries scored and skipped (block-max pruning)."""

    def aliases(self, conn: apsw.Connection) -> Table:
        """The store's compiled alias table, as of ``conn``'s transaction (cached by version)."""
        version = alias_rows.version(conn)
        with self._lock:
            cached_version, table = self._table
        if cached_version == version:
            return table
        table = Table.compile(alias_rows.rows(conn))
        with self._lock:
            self._table = (version, table)
        return table

    # -- writes (inside the caller's transaction) ---------------------------

    def add(
        self,
        conn: apsw.Connection,
        docs: Sequence[tuple[int, str]],
        version: int,
        ahead: Ahead | None = None,
    ) -> None:
        """Index documents ``(key, content)`` whose keys are not indexed yet.

        With session context on, the documents they now sit beside in their
        dialogs are re-indexed too, in the same transaction. ``ahead`` is
        used when it analysed these very texts under the current alias table.
        """
        if not docs:
            return
        table = self.aliases(conn)
        own = None if ahead is None else ahead.fields_of(docs, table)
        if own is None:
            own = fields_many([text for _, text in docs], table)
        if session_rows.enabled(conn, session_rows.DATES):
            with_dates = context.with_dates(
                conn, {key: f for (key, _), f in zip(docs, own, strict=True)}
            )
            own = [with_dates[key] for key, _ in docs]
        if not session_rows.enabled(conn):
            entries = [
                context.Entry(key, fields.alone(), None)
                for (key, _), fields in zip(docs, own, strict=True)
            ]
            self._put(conn, [e for e in entries if e.counts], version)
            return
        entries, changed = context.plan_add(
            conn, docs, own, lambda key: self._links(conn, key), table
        )
        for key in changed:
            self._drop(conn, key, version)
        # A sessionless document without terms is not indexed (as without context).
        self._put(conn, [e for e in entries if e.counts or e.links is not None], version)

    def remove(self, conn: apsw.Connection, key: int, version: int) -> None:
        """Drop a document's postings (a no-op when it is not indexed).

        With session context, its two dialog neighbours are re-indexed without it.
        """
        links = self._drop(conn, key, version)
        if links is None or links == (None, None):
            return
        entries = context.plan_remove(
            conn, links, lambda other: self._links(conn, other), self.aliases(conn)
        )
        for entry in entries:
            self._drop(conn, entry.key, version)
        self._put(conn, entries, version)

    def detach(self, conn: apsw.Connection, keys: Sequence[int], version: int) -> list[int]:
        """Remove ``keys`` before their dialog changes (a move); return the ones that were indexed.

        Call :meth:`attach` with the result once the records are changed, in
        the same transaction, so old and new neighbours are both re-indexed.
        """
        indexed = [key for key in keys if postings.get_doc(conn, key) is not None]
        for key in indexed:
            self.remove(conn, key, version)
        return indexed

    def attach(self, conn: apsw.Connection, keys: Sequence[int], version: int) -> None:
        """Index ``keys`` again from their records' current content (after :meth:`detach`)."""
        texts = session_rows.contents(conn, keys)
        self.add(conn, [(key, texts[key]) for key in keys if key in texts], version)

    def rebuild(
        self,
        conn: apsw.Connection,
        version: int,
        *,
        session_context: bool,
        date_words: bool | None = None,
    ) -> None:
        """Re-derive every posting from the records, with session context on or off.

        This is the definition incremental maintenance must match (and the
        switch: turning session context or date words on or off re-indexes
        the store). ``date_words`` ``None`` keeps the store's setting.
        """
        conn.execute("DELETE FROM lex_blocks")
        conn.execute("DELETE FROM lex_docs")
        conn.execute("DELETE FROM lex_terms")
        conn.execute("UPDATE lex_stats SET doc_count = 0, total_length = 0 WHERE id = 1")
        session_rows.set_enabled(conn, session_context)
        if date_words is not None:
            session_rows.set_enabled(conn, date_words, session_rows.DATES)
        alias_rows.clear_pending(conn)  # every posting follows the current alias table again
        self.add(conn, session_rows.unforgotten(conn), version)
        self.clear_cache()

    def reindex(self, conn: apsw.Connection, keys: Sequence[int], version: int) -> int:
        """Re-derive the postings of ``keys`` under the current alias table; return how many.

        Only indexed documents are touched (a forgotten or deleted memory has
        no postings to redo); their dialog links stay as they are, since an
        alias change moves no memory.
        """
        indexed: dict[int, postings.Links] = {}
        for key in sorted(set(keys)):
            entry = postings.get_entry(conn, key)
            if entry is not None:
                indexed[key] = entry[3]
        if not indexed:
            return 0
        entries = context.plan_reindex(
            conn, indexed, self.aliases(conn), context=session_rows.enabled(conn)
        )
        for key in indexed:
            self._drop(conn, key, version)
        self._put(conn, entries, version)
        return len(indexed)

    def holding(self, conn: apsw.Connection, key_terms: Sequence[str]) -> set[int]:
        """The indexed documents whose postings hold every one of ``key_terms``.

        Postings include the words a document lends its dialog neighbours, so
        this is every document whose own text or a neighbour's contains an
        alias key with these terms (a superset: the terms need not be adjacent).
        """
        rows = postings.lookup_terms(conn, key_terms)
        if len(rows) < len(set(key_terms)):
            return set()
        found: set[int] | None = None
        for row in rows.values():
            keys = set(self._postings(conn, row).keys.tolist())
            found = keys if found is None else found & keys
        return found or set()

    def _links(self, conn: apsw.Connection, key: int) -> postings.Links:
        entry = postings.get_entry(conn, key)
        return (None, None) if entry is None else entry[3]

    def _put(self, conn: apsw.Connection, entries: Sequence[context.Entry], version: int) -> None:
        """Write the postings of documents that are not indexed (weighted counts given).

        The whole batch at once (:mod:`embedmind.backend.sqlite.bulk_postings`);
        only postings of re-indexed older documents that land between a term's
        existing keys are merged one at a time.
        """
        if not entries:
            return
        terms = {term for entry in entries for term in entry.counts}
        ids = postings.term_ids(conn, list(terms))
        ids.update(postings.create_terms(conn, sorted(terms - ids.keys()), version))
        total = sum(len(entry.counts) for entry in entries)
        # chain and map step through the terms in C: a generator over them ran
        # Python bytecode for each of a batch's 100,000s of postings.
        terms_of = chain.from_iterable(e.counts for e in entries)
        term_ids = np.fromiter(map(ids.__getitem__, terms_of), np.int64, total)
        tfs = np.fromiter(chain.from_iterable(e.counts.values() for e in entries), np.int64, total)
        per_doc = [len(entry.counts) for entry in entries]
        lengths = [sum(entry.counts.values()) for entry in entries]
        blobs = postings.pack_terms(per_doc, term_ids, tfs)
        docs = [
            (e.key, length, blob, *(e.links or (None, None)))
            for e, length, blob in zip(entries, lengths, blobs, strict=True)
        ]
        postings.put_packed_docs(conn, docs)
        postings.add_stats(conn, len(docs), sum(lengths))
        batch = bulk_postings.Batch.of([e.key for e in entries], lengths, per_doc, term_ids, tfs)
        for term_id, new in bulk_postings.write(conn, batch, version):
            _insert_between(conn, term_id, new, version)

    def _drop(self, conn: apsw.Connection, key: int, version: int) -> postings.Links | None:
        """Drop one document's postings; return the links they were built with."""
        doc = postings.get_entry(conn, key)
        if doc is None:
            return None
        length, term_ids, _, links = doc
        for term_id in term_ids.tolist():
            block = postings.block_for_key(conn, term_id, key)
            if block is None:  # pragma: no cover - lex_docs and blocks agree
                continue
            remaining = block.postings.without(key)
            if len(remaining):
                postings.write_block(
                    conn, block.block_id, term_id, block.first_key, remaining, version
                )
            else:
                postings.delete_block(conn, block.block_id)
            postings.change_df(conn, term_id, -1, version)
        postings.delete_doc(conn, key)
        postings.add_stats(conn, -1, -length)
        return links

    # -- reads ---------------------------------------------------------------

    def term_lists(
        self, conn: apsw.Connection, terms: Sequence[str]
    ) -> tuple[list[TermList], float]:
        """The postings of the query terms that exist, ready to score, and avgdl."""
        weights = aliases.query_weights(terms, self.aliases(conn))
        rows = postings.lookup_terms(conn, weights)
        doc_count, total_length = postings.stats(conn)
        if not rows or doc_count == 0:
            return [], 1.0
        avgdl = total_length / doc_count
        lists = []
        for term, row in rows.items():
            cached = self._postings(conn, row)
            weight = weights[term]
            stats = (doc_count, total_length, row.df, weight)
            found = cached.scored.get(stats)
            if found is None:
                found = cached.term_list(row.df, doc_count, weight, avgdl)
                found = maxscore.with_impacts(found, avgdl)
                # One entry per term: the statistics move with every write.
                cached.scored.clear()
                cached.scored[stats] = found
            lists.append(found)
        return lists, avgdl

    def score(self, conn: apsw.Connection, terms: Sequence[str]) -> Scored:
        """Score every document containing at least one of ``terms``."""
        lists, avgdl = self.term_lists(conn, terms)
        keys, scores = maxscore.exhaustive(lists, avgdl)
        return Scored(keys, scores)

    def _postings(self, conn: apsw.Connection, row: postings.TermRow) -> _Cached:
        """The term's decoded postings: cached, or refreshed reading only changed blocks."""
        with self._lock:
            stale = self._terms.peek(row.term_id)
            if stale is not None and stale[0] == row.version:
                self._terms.touch(row.term_id)
                return stale[1]
        versions = postings.block_versions(conn, row.term_id)
        kept = stale[1].by_block() if stale is not None else {}
        missing = [b for b, v in versions if (b, v) not in kept]
        loaded = postings.load_blocks(conn, missing) if missing else {}
        parts = [kept[(b, v)] if (b, v) in kept else loaded[b] for b, v in versions]
        merged = _Cached.of(parts, versions)
        with self._lock:
            self._terms.put(row.term_id, row.version, merged)
        return merged

    def cached_bytes(self) -> int:
        """Bytes of decoded postings held for the store (at most :data:`CACHE_BYTES`)."""
        with self._lock:
            return self._terms.size

    def statistics(self, conn: apsw.Connection) -> tuple[int, int]:
        """``(indexed documents, dictionary terms)``."""
        return postings.stats(conn)[0], postings.term_count(conn)

    def clear_cache(self) -> None:
        """Drop every cached posting (after a vacuum or a rebuild)."""
        with self._lock:
            self._terms = _LRU(CACHE_BYTES)


def _insert_between(conn: apsw.Connection, term_id: int, new: Postings, version: int) -> None:
    """Merge postings whose keys fall inside the term's existing range, one at a time."""
    for i in range(len(new)):
        one = new.slice(i, i + 1)
        key = int(one.keys[0])
        block = postings.block_for_key(conn, term_id, key)
        if block is None:  # pragma: no cover - the term has blocks
            postings.write_block(conn, None, term_id, key, one, version)
            continue
        merged = block.postings.merged(one)
        first_key = min(block.first_key, key)
        if len(merged) <= BLOCK_SIZE:
            postings.write_block(conn, block.block_id, term_id, first_key, merged, version)
            continue
        half = len(merged) // 2
        upper = merged.slice(half, len(merged))
        postings.write_blocks(
            conn,
            [
                (block.block_id, term_id, first_key, merged.slice(0, half)),
                (None, term_id, int(upper.keys[0]), upper),
            ],
            version,
        )


def best_first(scored: Scored, first: int) -> Iterator[npt.NDArray[np.int64]]:
    """Yield positions into ``scored`` in descending score order, in growing chunks.

    Ties break by ascending key. Only the part of the order a caller consumes is
    ever sorted, so a filter that is satisfied early costs a partial sort.
    """
    remaining = np.arange(len(scored))
    size = max(first, 1)
    while remaining.size:
        chosen = remaining if remaining.size <= size else _first(scored, remaining, size)
        order = np.lexsort((scored.keys[chosen], -scored.scores[chosen]))
        yield chosen[order]
        if chosen.size == remaining.size:
            return
        keep = np.ones(len(scored), dtype=bool)
        keep[chosen] = False
        remaining = remaining[keep[remaining]]
        size *= 4


def _first(scored: Scored, among: npt.NDArray[np.int64], size: int) -> npt.NDArray[np.int64]:
    """The ``size`` positions of ``among`` first by (score descending, key ascending).

    ``argpartition`` alone picks arbitrarily among the scores tied at the cut,
    so the first chunk (whose size follows ``k``) could hold other tied
    memories than a deeper ask's: the ties at the cut are taken by key.
    """
    scores = scored.scores[among]
    cut = scores[np.argpartition(-scores, size - 1)[size - 1]]
    above = among[scores > cut]
    tied = among[scores == cut]
    tied = tied[np.argsort(scored.keys[tied], kind="stable")[: size - len(above)]]
    return np.concatenate([above, tied])


@dataclass(frozen=True)
class _Cached:
    """A term's whole posting list, decoded for scoring."""

    keys: npt.NDArray[np.int64]
    tf: npt.NDArray[np.uint16]
    length: npt.NDArray[np.uint32]
    max_tf: int
    min_length: int
    starts: npt.NDArray[np.int64]
    """Where each stored block starts in ``keys``."""
    block_tf: npt.NDArray[np.float64]
    """Each block's largest tf."""
    block_length: npt.NDArray[np.float64]
    """Each block's smallest length (with ``block_tf``, the block-max bound)."""
    blocks: tuple[tuple[int, int], ...] = ()
    """``(block_id, version)`` of each stored block, in key order."""
    scored: dict[tuple[int, int, int, float], TermList] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The term list with precomputed impacts, by ``(N, total length, df, weight)``."""

    @staticmethod
    def of(parts: list[Postings], blocks: Sequence[tuple[int, int]] = ()) -> _Cached:
        p = concat(parts)
        if not len(p):
            empty = np.empty(0, np.float64)
            return _Cached(p.keys, p.tfs, p.lengths, 0, 1, np.empty(0, np.int64), empty, empty)
        sizes = np.asarray([len(b) for b in parts], dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        block_tf = np.maximum.reduceat(p.tfs, starts).astype(np.float64)
        block_length = np.minimum.reduceat(p.lengths, starts).astype(np.float64)
        return _Cached(
            p.keys,
            p.tfs,
            p.lengths,
            int(block_tf.max()),
            int(block_length.min()),
            starts,
            block_tf,
            block_length,
            tuple(blocks),
        )

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def nbytes(self) -> int:
        """What this entry holds once its impacts are computed (float32, one per posting)."""
        arrays = (self.keys, self.tf, self.length, self.starts, self.block_tf, self.block_length)
        return sum(a.nbytes for a in arrays) + 4 * len(self) + 8 * len(self.starts)

    def by_block(self) -> dict[tuple[int, int], Postings]:
        """Each stored block's postings (views), by ``(block_id, version)``: reused on a refresh."""
        stops = [*self.starts[1:].tolist(), len(self)]
        whole = Postings(self.keys, self.tf, self.length)
        return {
            block: whole.slice(start, stop)
            for block, start, stop in zip(self.blocks, self.starts.tolist(), stops, strict=True)
        }

    def term_list(self, df: int, doc_count: int, weight: float, avgdl: float) -> TermList:
        """These postings ready to score under the given collection statistics."""
        # A term's score is linear in its idf: weighting the idf weights the term.
        idf = bm25.idf(df, doc_count) * weight
        # A hair above the exact bound: scores are computed in float32.
        bound = bm25.upper_bound(self.max_tf, self.min_length, idf, avgdl) * 1.0001
        bounds = bm25.upper_bounds(self.block_tf, self.block_length, idf, avgdl) * 1.0001
        return TermList(self.keys, self.tf, self.length, idf, bound, self.starts, bounds)


class _LRU:
    """Versioned LRU of decoded postings, bounded by their bytes (:attr:`_Cached.nbytes`)."""

    def __init__(self, capacity: int) -> None:
        self._items: OrderedDict[int, tuple[int, _Cached]] = OrderedDict()
        self.size = 0
        """Bytes held."""
        self._capacity = capacity

    def peek(self, key: int) -> tuple[int, _Cached] | None:
        """``(version, value)`` whatever the version (a stale entry's blocks are reused)."""
        return self._items.get(key)

    def touch(self, key: int) -> None:
        """Mark ``key`` most recently used."""
        if key in self._items:
            self._items.move_to_end(key)

    def put(self, key: int, version: int, value: _Cached) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= old[1].nbytes
        self._items[key] = (version, value)
        self.size += value.nbytes
        while self.size > self._capacity and len(self._items) > 1:
            _, (_, evicted) = self._items.popitem(last=False)
            self.size -= evicted.nbytes
