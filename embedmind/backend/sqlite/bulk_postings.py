"""The postings of a whole batch, grouped by term and cut into blocks with numpy.

:meth:`embedmind.backend.sqlite.lexical.index.LexicalIndex.add` hands the
analysed documents of one transaction here. Instead of a Python loop per term
(decode its last block, concatenate, slice, take the max and min, encode:
a third of a bulk load's time, ``python -m embedmind_bench.ingest_profile``),
every posting of the batch is one row of four arrays; one sort groups them by
term, each term's short last block is put in front of its new postings, and
the block boundaries, their largest tf and smallest length come from
``reduceat`` over the whole batch. Only the byte slices of each block remain
per block.

A term's short last block is topped up from its stored bytes: when the new
postings fit its section widths, each section gets the new values appended
(:func:`~embedmind.backend.sqlite.blocks.appended_many`), the bytes encoding
the whole block would give. A load of 10,000 chat messages into 90,000 tops
up about 9,500 last blocks holding 450,000 postings, against 124,000 new ones,
and encoded them all again before.

The layout rule is the one a term's postings get when they arrive one at a
time: a term's last block is topped up to :data:`BLOCK_SIZE` postings, then new
blocks of that size follow. So a batch leaves the same blocks (same first
keys, counts, bounds and bytes) as adding its documents one by one, whatever
the batch size (``tests/test_bulk_equivalence.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite import postings as store
from embedmind.backend.sqlite.blocks import BLOCK_SIZE, Postings, appended_many, encode_many
from embedmind.backend.sqlite.pair_order import pair_order

_TF_MAX = 65_535
_LENGTH_MAX = 2**32 - 1


@dataclass(frozen=True)
class Batch:
    """Every posting of a batch, sorted by term then key."""

    terms: npt.NDArray[np.int64]
    keys: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.uint16]
    lengths: npt.NDArray[np.uint32]

    @staticmethod
    def of(
        doc_keys: Sequence[int],
        doc_lengths: Sequence[int],
        per_doc: Sequence[int],
        term_ids: npt.NDArray[np.int64],
        tfs: npt.NDArray[np.int64],
    ) -> Batch:
        """Postings from documents; doc ``i`` owns ``per_doc[i]`` consecutive term ids and tfs."""
        counts = np.asarray(per_doc, dtype=np.int64)
        keys = np.repeat(np.asarray(doc_keys, dtype=np.int64), counts)
        lengths = np.repeat(np.asarray(doc_lengths, dtype=np.int64), counts)
        order = pair_order(term_ids, keys)
        return Batch(
            term_ids[order],
            keys[order],
            np.minimum(tfs[order], _TF_MAX).astype(np.uint16),
            np.minimum(lengths[order], _LENGTH_MAX).astype(np.uint32),
        )

    def groups(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(term ids, start of each term's run)``, in term order."""
        if not len(self.terms):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(self.terms)) + 1]).astype(np.int64)
        return self.terms[starts], starts

    def run(self, start: int, stop: int) -> Postings:
        """One term's postings."""
        return Postings(self.keys[start:stop], self.tfs[start:stop], self.lengths[start:stop])


def write(conn: apsw.Connection, batch: Batch, version: int) -> list[tuple[int, Postings]]:
    """Append the batch's postings to their terms' blocks; raise their document frequencies.

    Args:
        conn: A connection inside the write transaction.
        batch: The postings, sorted by term then key.
        version: The transaction's write sequence.

    Returns:
        ``(term_id, postings)`` of the terms whose new keys fall inside their
        existing range (re-indexed older documents), for the caller to merge
        one posting at a time; their document frequencies are raised already.
    """
    term_ids, starts = batch.groups()
    if not len(term_ids):
        return []
    stops = np.append(starts[1:], len(batch.terms))
    lasts = store.last_blocks(conn, term_ids.tolist())
    between: list[tuple[int, Postings]] = []
    runs: list[tuple[int, int, int, store.LastBlock | None]] = []  # term, start, stop, to top up
    for term_id, start, stop in zip(
        term_ids.tolist(), starts.tolist(), stops.tolist(), strict=True
    ):
        last = lasts.get(term_id)
        if last is not None and int(batch.keys[start]) <= last.last_key:
            between.append((term_id, batch.run(start, stop)))
            continue
        runs.append(
            (
                term_id,
                start,
                stop,
                last if last is not None and last.count < BLOCK_SIZE else None,
            )
        )
    store.add_dfs(
        conn, list(zip(term_ids.tolist(), (stops - starts).tolist(), strict=True)), version
    )
    tops = [(start, stop, last) for _, start, stop, last in runs if last is not None]
    topped = _topped_up(batch, tops)
    # A last block a new value does not fit is encoded whole: decoded together here.
    wide = [last for (_, _, last), (block, _) in zip(tops, topped, strict=True) if block is None]
    whole = iter(store.decode_rows([(last.data, last.count) for last in wide]))
    topped_in_order = iter(topped)
    done: list[store.EncodedBlock] = []
    pieces: list[Postings] = []
    heads: list[tuple[int, int, int | None, int | None]] = []  # term, length, block id, first key
    for term_id, start, stop, last in runs:
        if last is None:
            pieces.append(batch.run(start, stop))
            heads.append((term_id, stop - start, None, None))
            continue
        block, taken = next(topped_in_order)
        if block is None:  # a section of the last block widens: encode it whole
            pieces += [next(whole), batch.run(start, stop)]
            heads.append((term_id, last.count + stop - start, last.block_id, last.first_key))
            continue
        done.append((last.block_id, term_id, *block))
        if start + taken < stop:
            pieces.append(batch.run(start + taken, stop))
            heads.append((term_id, stop - start - taken, None, None))
    if heads:
        done += _blocks(pieces, heads)
    if done:
        store.write_encoded(conn, done, version)
    return between


Topped = tuple[tuple[int, int, int, int, bytes] | None, int]
"""A topped-up last block's ``(first key, count, max tf, min length, bytes)``, or ``None``
when it must be encoded whole; and how many new postings it took."""


def _topped_up(batch: Batch, runs: Sequence[tuple[int, int, store.LastBlock]]) -> list[Topped]:
    """Each last block topped up with the first new postings of its run, from its bytes.

    Per run ``(start, stop, last block)`` of new postings, from the last
    block's bytes (:func:`~embedmind.backend.sqlite.blocks.appended_many`).
    """
    if not runs:
        return []
    counts = [last.count for _, _, last in runs]
    starts = np.asarray([start for start, _, _ in runs], dtype=np.int64)
    stops = np.asarray([stop for _, stop, _ in runs], dtype=np.int64)
    taken = np.minimum(stops - starts, BLOCK_SIZE - np.asarray(counts, dtype=np.int64))
    at = np.repeat(starts - (np.cumsum(taken) - taken), taken) + np.arange(int(taken.sum()))
    keys = batch.keys[at]
    tfs = batch.tfs[at].astype(np.int64)
    lengths = batch.lengths[at].astype(np.int64)
    data = appended_many(
        [last.data for _, _, last in runs],
        counts,
        [last.head for _, _, last in runs],
        np.asarray([last.last_key for _, _, last in runs], dtype=np.int64),
        keys,
        tfs,
        lengths,
        taken,
    )
    firsts = np.cumsum(taken) - taken
    max_tf = np.maximum.reduceat(tfs, firsts).tolist()
    min_length = np.minimum.reduceat(lengths, firsts).tolist()
    out: list[Topped] = []
    for (_, _, last), block, n, top, low in zip(
        runs, data, taken.tolist(), max_tf, min_length, strict=True
    ):
        if block is None:
            out.append((None, 0))
            continue
        count = last.count + n
        bounds = (max(last.max_tf, top), min(last.min_length, low))
        out.append(((last.first_key, count, *bounds, block), n))
    return out


def _blocks(
    pieces: list[Postings], heads: list[tuple[int, int, int | None, int | None]]
) -> list[store.EncodedBlock]:
    """Cut each term's run (its topped-up last block, then its new postings) into blocks."""
    keys = np.concatenate([p.keys for p in pieces]).astype(np.int64)
    tfs = np.concatenate([p.tfs for p in pieces]).astype(np.int64)
    lengths = np.concatenate([p.lengths for p in pieces]).astype(np.int64)
    runs = np.asarray([length for _, length, _, _ in heads], dtype=np.int64)
    run_starts = np.cumsum(runs) - runs
    per_run = (runs + BLOCK_SIZE - 1) // BLOCK_SIZE
    run_of = np.repeat(np.arange(len(heads)), per_run)
    nth = np.arange(len(run_of)) - np.repeat(np.cumsum(per_run) - per_run, per_run)
    block_starts = run_starts[run_of] + nth * BLOCK_SIZE
    block_stops = np.minimum(block_starts + BLOCK_SIZE, (run_starts + runs)[run_of])
    max_tf = np.maximum.reduceat(tfs, block_starts)
    min_length = np.minimum.reduceat(lengths, block_starts)
    data = encode_many(keys, tfs, lengths, block_starts, block_stops)
    out: list[store.EncodedBlock] = []
    for i, (run, a, b) in enumerate(
        zip(run_of.tolist(), block_starts.tolist(), block_stops.tolist(), strict=True)
    ):
        term_id, _, block_id, first_key = heads[run]
        head = nth[i] == 0 and block_id is not None  # the topped-up last block keeps its row
        out.append(
            (
                block_id if head else None,
                term_id,
                first_key if head and first_key is not None else int(keys[a]),
                b - a,
                int(max_tf[i]),
                int(min_length[i]),
                data[i],
            )
        )
    return out
