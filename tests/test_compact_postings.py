"""The compact posting encoding (schema 7) and the migration that rewrites older stores in it.

Oracles: every encoder round-trips through its decoder exactly (hypothesis),
the batch encoder writes the bytes the one-block encoder writes, damaged bytes
get a ``StorageError``, and a store downgraded to the schema 6 layout (the
fixed-width blocks and int64 pair term lists, made here from the store's own
postings) migrates back to the very same postings and answers.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import blocks, postings, varint
from embedmind.backend.sqlite.blocks import Postings
from embedmind.errors import StorageError

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
_VOCABULARY = (
    "alice bob tea coffee meeting monday paris flight hotel dentist birthday cake project "
    "deadline report budget garden roses piano lesson doctor visa passport train ticket"
).split()


def iter_documents(count: int) -> list[str]:
    """``count`` seeded chat-like texts: shared terms, rare ones, one in every text."""
    rng = random.Random(7)
    return [
        " ".join(rng.choice(_VOCABULARY) for _ in range(rng.randint(4, 20)))
        + f" chat note{i % 97}"  # "chat" in all: a term of several blocks
        for i in range(count)
    ]


gaps = st.lists(st.integers(1, 2**40), min_size=0, max_size=40)
counts = st.integers(1, 65_535)
lengths = st.integers(1, 2**32 - 1)


@st.composite
def postings_lists(draw: st.DrawFn) -> Postings:
    first = draw(st.integers(0, 2**50))
    steps = draw(gaps)
    keys = np.cumsum([first, *steps]).astype(np.int64)
    n = len(keys)
    tfs = draw(st.lists(counts | st.integers(1, 3), min_size=n, max_size=n))
    lens = draw(st.lists(lengths | st.integers(1, 200), min_size=n, max_size=n))
    return blocks.make(keys.tolist(), tfs, lens)


def _same(a: Postings, b: Postings) -> bool:
    return (
        a.keys.tolist() == b.keys.tolist()
        and a.tfs.tolist() == b.tfs.tolist()
        and a.lengths.tolist() == b.lengths.tolist()
    )


def test_each_value_takes_the_bytes_of_its_seven_bit_groups() -> None:
    edges = [v for k in range(1, 10) for v in (2 ** (7 * k) - 1, 2 ** (7 * k)) if v < 2**63]
    values = np.asarray([0, 1, *edges, 2**63 - 1], dtype=np.int64)
    want = [max(1, -(-int(v).bit_length() // 7)) for v in values.tolist()]
    assert varint.sizes(values).tolist() == want
    assert [len(blocks.leb128(v)) for v in values.tolist()] == want


@given(st.lists(st.integers(0, 2**63 - 1) | st.integers(0, 300), max_size=60))
def test_leb128_round_trips(values: list[int]) -> None:
    array = np.asarray(values, dtype=np.int64)
    data = varint.encode(array).tobytes()
    assert varint.decode(data, len(values)).tolist() == values
    assert varint.decode_all(data).tolist() == values
    assert len(data) == int(varint.sizes(array).sum())
    assert [blocks.leb128(v) for v in values] == [
        varint.encode(np.asarray([v])).tobytes() for v in values
    ]


@given(postings_lists())
def test_a_block_round_trips(block: Postings) -> None:
    assert _same(blocks.decode(blocks.encode(block), len(block)), block)


@given(st.lists(postings_lists(), min_size=1, max_size=5))
def test_the_batch_encoder_writes_the_bytes_of_one_block_at_a_time(parts: list[Postings]) -> None:
    n = np.asarray([len(p) for p in parts], dtype=np.int64)
    stops = np.cumsum(n)
    many = blocks.encode_many(
        np.concatenate([p.keys for p in parts]),
        np.concatenate([p.tfs for p in parts]).astype(np.int64),
        np.concatenate([p.lengths for p in parts]).astype(np.int64),
        stops - n,
        stops,
    )
    assert many == [blocks.encode(p) for p in parts]


def test_each_last_block_carries_the_head_and_last_key_of_its_own_bytes(tmp_path: Path) -> None:
    # Last blocks whose heads differ in each field a top-up reads: two-byte gaps (a term in
    # the first and the last text), a tf past one byte, a length past one byte, and keys
    # past one varint byte. Paired with another term's head, a top-up would write bad bytes.
    texts = [f"marmot filler{i}" for i in range(400)]
    texts[0] += " quokka"
    texts[399] += " quokka"
    texts[200] += " zebra" * 300
    texts[300] += " walrus " + " ".join(f"w{j}" for j in range(300))
    path = str(tmp_path / "heads.mind")
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many(texts)
    conn = apsw.Connection(path)
    term_ids = [int(row[0]) for row in conn.execute("SELECT term_id FROM lex_terms")]
    lasts = postings.last_blocks(conn, term_ids)
    assert len({last.head[1:] for last in lasts.values()}) > 1
    for last in lasts.values():
        assert last.head == blocks.heads_of([last.data], [last.count])[0]
        assert last.last_key == int(blocks.decode(last.data, last.count).keys[-1])
    conn.close()


@given(st.lists(st.tuples(postings_lists(), postings_lists()), min_size=1, max_size=5))
def test_appending_to_blocks_writes_the_bytes_of_encoding_them_whole(
    pairs: list[tuple[Postings, Postings]],
) -> None:
    # Each pair: an old block, and new postings moved above its last key.
    olds, news = [], []
    for old, new in pairs:
        shift = int(old.keys[-1]) + 1 - int(new.keys[0])
        olds.append(old)
        news.append(Postings(new.keys + shift, new.tfs, new.lengths))
    data = [blocks.encode(old) for old in olds]
    appended = blocks.appended_many(
        data,
        [len(old) for old in olds],
        blocks.heads_of(data, [len(old) for old in olds]),
        np.asarray([int(old.keys[-1]) for old in olds], dtype=np.int64),
        np.concatenate([new.keys for new in news]),
        np.concatenate([new.tfs for new in news]).astype(np.int64),
        np.concatenate([new.lengths for new in news]).astype(np.int64),
        np.asarray([len(new) for new in news], dtype=np.int64),
    )
    for old, new, data in zip(olds, news, appended, strict=True):
        whole = blocks.encode(old.merged(new))
        if data is None:  # only when a new value needs a wider section
            assert whole[0] != blocks.encode(old)[0]
        else:
            assert data == whole


def test_a_short_document_posting_costs_a_few_bytes() -> None:
    # The fixed layout of schemas 1-6 cost 14 bytes a posting.
    keys = np.cumsum(np.full(512, 7)).astype(np.int64)
    block = blocks.make(keys.tolist(), [1] * 512, [12] * 512)
    assert len(blocks.encode(block)) <= 3 * 512 + 4


DAMAGES = [
    lambda d: d[:-1],  # cut short
    lambda d: d + b"\x00",  # a byte too many
    lambda d: bytes([d[0] | 0x40]) + d[1:],  # an unknown format
    lambda d: d[:1] + b"\xff" * 12,  # a first key that never ends
    lambda d: b"",
    # 8-byte gaps summing past the largest key
    lambda d: bytes([0x03]) + b"\x01" + b"\xff" * 16 + b"\x01\x01\x01" + b"\x01\x01\x01",
    # an 8-byte tf above 65535
    lambda d: bytes([0x0C]) + b"\x01" + b"\x01\x01" + b"\xff" * 24 + b"\x01\x01\x01",
]
"""Ways a stored block of the three postings below can be damaged or forged."""


@pytest.mark.parametrize("mutate", DAMAGES)
def test_damaged_blocks_get_a_storage_error(mutate: Any) -> None:
    good = blocks.encode(blocks.make([1, 2], [1, 1], [3, 3]))
    bad = mutate(blocks.encode(blocks.make([5, 9, 400], [1, 2, 3], [10, 20, 300])))
    with pytest.raises(StorageError):
        blocks.decode(bad, 3)
    with pytest.raises(StorageError):  # among good blocks, decoded at once
        blocks.decode_many([good, bad], [2, 3])


@pytest.mark.parametrize("data", [b"\x80", b"\x81\x81", b"\xff" * 10 + b"\x01"])
def test_damaged_term_lists_get_a_storage_error(data: bytes) -> None:
    with pytest.raises(StorageError, match="document 7"):
        postings.unpack_terms(data, 7)


@given(
    st.lists(
        # Ids up to 2**40 sort packed with the document; up to 2**62, with lexsort.
        st.dictionaries(
            st.integers(1, 2**40) | st.integers(1, 2**62), st.integers(1, 10_000), max_size=12
        ),
        max_size=8,
    )
)
def test_term_lists_round_trip_in_term_order(docs: list[dict[int, int]]) -> None:
    ids = np.asarray([t for d in docs for t in d], dtype=np.int64)
    tfs = np.asarray([f for d in docs for f in d.values()], dtype=np.int64)
    blobs = postings.pack_terms([len(d) for d in docs], ids, tfs)
    for doc, blob in zip(docs, blobs, strict=True):
        term_ids, counted = postings.unpack_terms(blob, 1)
        assert list(zip(term_ids.tolist(), counted.tolist(), strict=True)) == sorted(doc.items())


# -- the migration -------------------------------------------------------------------


def _postings(conn: apsw.Connection) -> dict[str, Any]:
    """Every block (bounds, versions, decoded postings) and every document's term list."""
    found: dict[str, Any] = {"blocks": {}, "docs": {}}
    for row in conn.execute(
        "SELECT block_id, term_id, first_key, count, max_tf, min_length, version, data "
        "FROM lex_blocks"
    ):
        *head, data = row
        decoded = blocks.decode(data, int(row[3]))
        found["blocks"][row[0]] = (*head, decoded.keys.tolist(), decoded.tfs.tolist(),
                                   decoded.lengths.tolist())  # fmt: skip
    for (key,) in conn.execute("SELECT key FROM lex_docs").fetchall():
        entry = postings.get_entry(conn, int(key))
        assert entry is not None
        found["docs"][key] = (entry[0], entry[1].tolist(), entry[2].tolist(), entry[3])
    return found


def _downgrade(path: Path) -> None:
    """Rewrite the file's postings as schema 6 stored them, and mark it schema 6."""
    conn = apsw.Connection(str(path))
    with conn:
        for block_id, count, data in conn.execute(
            "SELECT block_id, count, data FROM lex_blocks"
        ).fetchall():
            p = blocks.decode(data, int(count))
            fixed = (p.keys.astype("<i8").tobytes() + p.tfs.astype("<u2").tobytes()
                     + p.lengths.astype("<u4").tobytes())  # fmt: skip
            conn.execute("UPDATE lex_blocks SET data = ? WHERE block_id = ?", (fixed, block_id))
        for key, blob, prev, nxt in conn.execute(
            "SELECT key, terms, prev_key, next_key FROM lex_docs"
        ).fetchall():
            ids, tfs = postings.unpack_terms(blob, key)
            # Schema 6 kept the order terms were met and the links as negative "term ids".
            pairs = [*zip(ids.tolist()[::-1], tfs.tolist()[::-1], strict=True)]
            pairs += [(-1, prev)] if prev is not None else []
            pairs += [(-2, nxt)] if nxt is not None else []
            packed = np.asarray(pairs, dtype="<i8").reshape(-1, 2).tobytes()
            conn.execute("UPDATE lex_docs SET terms = ? WHERE key = ?", (packed, key))
        conn.execute("ALTER TABLE lex_docs DROP COLUMN prev_key")
        conn.execute("ALTER TABLE lex_docs DROP COLUMN next_key")
        conn.execute("PRAGMA user_version = 6")
    conn.close()


QUERIES = ["cello recital", "dog vet", "new york", "lisbon bees job", "zzz"]


def _answers(store: embedmind.Store) -> list[Any]:
    return [
        [(h.id, round(h.score, 12)) for h in store.recall(q, mode="text", k=50).hits]
        for q in QUERIES
    ]


@pytest.mark.parametrize("context", [True, False])
def test_a_schema_6_store_migrates_to_the_same_postings_and_answers(
    tmp_path: Path, context: bool
) -> None:
    path = tmp_path / "old.mind"
    docs = list(iter_documents(600))
    words = ["cello recital", "dog at the vet", "nyc trip", "lisbon bees", "job at nyc"]
    with embedmind.Store.open(path, embedder=None, session_context=context) as store:
        store.set_aliases({"nyc": "new york"})
        store.remember_many(
            embedmind.Draft(
                f"{text} {words[i % len(words)]}",
                id=f"m{i}",
                session_id=f"s{i % 7}",
                created_at=T0 + dt.timedelta(minutes=i),
            )
            for i, text in enumerate(docs)
        )
        for i in range(0, 600, 9):
            store.forget(f"m{i}")  # blocks with holes, neighbours re-linked
        before_answers = _answers(store)
        with store._db.read() as conn:
            before = _postings(conn)
    assert before["blocks"] and before["docs"]
    _downgrade(path)
    with embedmind.Store.open(path, embedder=None) as store:
        assert store.stats().schema_version == 11  # migrations 7 to 11 ran again
        with store._db.read() as conn:
            assert _postings(conn) == before
        assert _answers(store) == before_answers
