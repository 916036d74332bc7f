"""The SQL lexical channel: BM25 equal to the engine's, postings equal to a rebuild, writers not serialised."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from embedmind import Store
from embedmind.backend.postgres import lexical, records, schema
from embedmind.backend.postgres.scopes import compile_scope
from embedmind.lexical import bm25
from embedmind.model import Draft

WORDS = ["tea", "green", "coffee", "alice", "bob", "paris", "trip", "dog", "run", "book"]


@pytest.fixture(scope="module")
def conn(pg_dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        schema.migrate(c, "lex")
        yield c


def _reset(conn: psycopg.Connection) -> None:
    conn.execute("TRUNCATE memories RESTART IDENTITY CASCADE")
    conn.execute("UPDATE lex_stats SET doc_count = 0, total_length = 0")


def _row(i: int, text: str, namespace: str = "ns", session: str | None = "s1") -> records.NewRow:
    return records.NewRow(
        id=f"m{i}", namespace=namespace, content=text, created_at=1_000 + i,
        fingerprint=f"f{i}", session_id=session,
    )  # fmt: skip


def _postings(conn: psycopg.Connection) -> set[tuple[str, int, int, int]]:
    rows = conn.execute("SELECT term, key, tf, length FROM lex_postings").fetchall()
    return {(t, int(k), int(tf), int(n)) for t, k, tf, n in rows}


def _docs(conn: psycopg.Connection) -> set[tuple[int, int, int | None, int | None]]:
    rows = conn.execute("SELECT key, length, prev_key, next_key FROM lex_docs").fetchall()
    return set(rows)


_TEXT = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)
_STEP = st.one_of(
    st.tuples(st.just("add"), st.lists(st.tuples(_TEXT, st.sampled_from(["s1", "s2", None])),
                                       min_size=1, max_size=4)),
    st.tuples(st.just("drop"), st.integers(0, 30)),
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=8))
def test_incremental_postings_equal_a_rebuild(conn: psycopg.Connection, steps: list) -> None:
    _reset(conn)
    n = 0
    live: list[int] = []
    for op, arg in steps:
        with conn.transaction():
            if op == "add":
                # Created out of order sometimes: a turn may land between indexed ones.
                rows = [
                    records.NewRow(
                        id=f"m{n + j}", namespace="ns", content=text,
                        created_at=(7 * (n + j)) % 23, fingerprint="f", session_id=session,
                    )
                    for j, (text, session) in enumerate(arg)
                ]  # fmt: skip
                n += len(rows)
                keys = records.insert(conn, rows)
                live += keys
                lexical.index(conn, keys, session_context=True)
            elif live:
                key = live.pop(arg % len(live))
                lexical.unindex(conn, [key], session_context=True)
                conn.execute("DELETE FROM memories WHERE key = %s", (key,))
    incremental, docs, stats = _postings(conn), _docs(conn), lexical.statistics(conn)
    with conn.transaction():
        lexical.rebuild(conn, session_context=True)
    assert _postings(conn) == incremental
    assert _docs(conn) == docs
    assert lexical.statistics(conn) == stats


def test_scores_equal_the_engines_bm25(conn: psycopg.Connection) -> None:
    """Same documents, same session context: the SQLite store's BM25 and the SQL one agree."""
    _reset(conn)
    texts = [
        "alice likes green tea", "bob runs with the dog", "a trip to paris with alice",
        "coffee or tea for bob", "the dog reads a book", "green green paris", "run run run",
    ]  # fmt: skip
    sessions = ["s1", "s1", "s1", "s2", "s2", None, "s1"]
    with conn.transaction():
        keys = records.insert(
            conn,
            [_row(i, t, session=s) for i, (t, s) in enumerate(zip(texts, sessions, strict=True))],
        )
        lexical.index(conn, keys, session_context=True)
    with Store.open(":memory:", embedder=None, session_context=True) as store:
        store.remember_many(
            [
                Draft(t, id=f"m{i}", namespace="ns", session_id=s,
                      created_at=__import__("datetime").datetime.fromtimestamp(
                          (1_000 + i) / 1e6, tz=__import__("datetime").timezone.utc))
                for i, (t, s) in enumerate(zip(texts, sessions, strict=True))
            ]
        )  # fmt: skip
        ids = {k: f"m{i}" for i, k in enumerate(keys)}
        for query in ["green tea", "dog", "paris alice trip", "run", "book coffee", "nothing"]:
            condition, params = compile_scope("ns", sql.SQL("m.namespace"))
            ours = [(ids[k], s) for k, s in lexical.text_top(conn, query, condition, params, 10)]
            # The text channel's raw score is BM25 (``Hit.score`` maps it to a probability).
            hits = store.recall(query, k=10, mode="text")
            theirs = [(h.id, h.channels["text"].raw) for h in hits]
            assert [i for i, _ in ours] == [i for i, _ in theirs], query
            assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=1e-5)


def test_bm25_matches_the_textbook_formula(conn: psycopg.Connection) -> None:
    _reset(conn)
    texts = ["tea tea green", "tea", "coffee green", "dog"]
    with conn.transaction():
        keys = records.insert(conn, [_row(i, t, session=None) for i, t in enumerate(texts)])
        lexical.index(conn, keys, session_context=True)
    condition, params = sql.SQL("TRUE"), []
    got = dict(lexical.text_top(conn, "tea green", condition, params, 10))
    # A new schema indexes date words: each row's created_at is on 1 January 1970.
    counts = [Counter([*t.split(), "1", "januari", "1970"]) for t in texts]
    avgdl = sum(sum(c.values()) for c in counts) / len(counts)
    expected = {}
    for key, c in zip(keys, counts, strict=True):
        s = 0.0
        for term in ("tea", "green"):
            if c[term]:
                df = sum(1 for other in counts if other[term])
                idf = bm25.idf(df, len(counts))
                norm = bm25.K1 * (1 - bm25.B + bm25.B * sum(c.values()) / avgdl)
                s += idf * c[term] * (bm25.K1 + 1) / (c[term] + norm)
        if s:
            expected[key] = s
    assert got.keys() == expected.keys()
    for key in got:
        # Each term's contribution is summed as float32: exact to about 6e-8.
        assert got[key] == pytest.approx(expected[key], rel=1e-7)


def test_the_same_words_in_any_order_score_bit_for_bit_alike(conn: psycopg.Connection) -> None:
    # The postings of a text are written in the order its words first appear,
    # and a sum taken in scan order rounded each order its own way: equal
    # texts then ranked by the last bit, not by key as their ties should.
    _reset(conn)
    words = ["alpha", "bravo", "charlie", "delta"]
    texts = [" ".join(p) for p in itertools.permutations(words)]
    texts += ["echo foxtrot"] * 7 + ["alpha"] * 3 + ["bravo charlie"] * 5
    with conn.transaction():
        keys = records.insert(conn, [_row(i, t, session=None) for i, t in enumerate(texts)])
        lexical.index(conn, keys, session_context=True)
    with conn.transaction():
        # Whatever plan the server picks: here the one that sorts the postings
        # by key before summing, which leaves each key's terms in any order.
        conn.execute("SET LOCAL enable_hashagg = off")
        found = lexical.text_top(conn, " ".join(words), sql.SQL("TRUE"), [], 24)
    assert len({score for _, score in found}) == 1
    assert [key for key, _ in found] == sorted(keys[:24])


def test_a_selective_filter_never_under_returns(conn: psycopg.Connection) -> None:
    _reset(conn)
    rows = [_row(i, "tea tea tea", namespace="crowd", session=None) for i in range(300)]
    rows += [
        _row(300 + i, "tea and more words here", namespace="few", session=None) for i in range(3)
    ]
    with conn.transaction():
        keys = records.insert(conn, rows)
        lexical.index(conn, keys, session_context=True)
    condition, params = compile_scope("few", sql.SQL("m.namespace"))
    assert len(lexical.text_top(conn, "tea", condition, params, 10)) == 3


@pytest.mark.serial  # the serial pass of `make test`: the second writer is timed against 1 s
def test_writers_on_two_connections_do_not_wait_for_each_other(
    pg_dsn: str, conn: psycopg.Connection
) -> None:
    """A writer holding its transaction open does not block another (no shared stats row)."""
    _reset(conn)
    with psycopg.connect(pg_dsn) as a, psycopg.connect(pg_dsn) as b:
        for c in (a, b):
            schema.use_schema(c, "lex")
            c.execute("SET lock_timeout = '2s'")
            c.commit()
        keys = records.insert(a, [_row(1, "green tea", session="dialog-a")])
        lexical.index(a, keys, session_context=True)  # a's transaction stays open
        began = time.perf_counter()
        keys = records.insert(b, [_row(2, "green coffee", session="dialog-b")])
        lexical.index(b, keys, session_context=True)
        b.commit()
        assert time.perf_counter() - began < 1.0
        a.commit()
    assert lexical.statistics(conn) == (2, 10)  # two words and three date words each


def test_two_writers_of_one_dialog_keep_its_context_exact(
    pg_dsn: str, conn: psycopg.Connection
) -> None:
    """The second writer of a dialog waits for the first, then links to its turn."""
    _reset(conn)
    with conn.transaction():
        keys = records.insert(conn, [_row(0, "alice tea")])
        lexical.index(conn, keys, session_context=True)
    errors: list[BaseException] = []
    with psycopg.connect(pg_dsn) as a, psycopg.connect(pg_dsn) as b:
        for c in (a, b):
            schema.use_schema(c, "lex")
            c.commit()
        keys = records.insert(a, [_row(1, "bob coffee")])
        lexical.index(a, keys, session_context=True)

        def second() -> None:
            try:
                more = records.insert(b, [_row(2, "paris trip")])
                lexical.index(b, more, session_context=True)
                b.commit()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)  # b is waiting for the dialog
        a.commit()
        thread.join(10)
    assert not errors, errors
    incremental = _postings(conn)
    with conn.transaction():
        lexical.rebuild(conn, session_context=True)
    assert _postings(conn) == incremental
