"""Session context in the lexical channel: incremental postings equal a rebuild from scratch.

The postings are read straight from the lexical tables (the store has no
introspection method for them yet). The switch is ``Store.open(...,
session_context=)``; an in-memory store, which cannot be reopened, turns it
through ``LexicalIndex.rebuild``.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import records
from embedmind.backend.sqlite.blocks import decode
from embedmind.backend.sqlite.postings import get_entry
from embedmind.lexical.analyzer import analyze

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
WORDS = ["lisbon", "dog", "cello", "recital", "hike", "bees", "job", "ceviche", "vet"]


def switch(store: embedmind.Store, on: bool) -> None:
    with store._db.write() as conn:
        store._lexical.rebuild(conn, records.next_write_seq(conn), session_context=on)


def snapshot(conn: apsw.Connection) -> dict[str, Any]:
    """Everything the lexical index holds, independent of block layout and term ids."""
    names = {int(i): str(t) for i, t in conn.execute("SELECT term_id, term FROM lex_terms")}
    postings: set[tuple[str, int, int, int]] = set()
    for term_id, count, data in conn.execute("SELECT term_id, count, data FROM lex_blocks"):
        block = decode(data, int(count))
        for key, tf, length in zip(block.keys, block.tfs, block.lengths, strict=True):
            postings.add((names[int(term_id)], int(key), int(tf), int(length)))
    dfs = {names[int(i)]: int(df) for i, df in conn.execute("SELECT term_id, df FROM lex_terms")}
    docs = {}
    for (key,) in conn.execute("SELECT key FROM lex_docs").fetchall():
        entry = get_entry(conn, int(key))
        assert entry is not None
        length, term_ids, tfs, links = entry
        terms = sorted(zip((names[int(t)] for t in term_ids), tfs.tolist(), strict=True))
        docs[int(key)] = (length, terms, links)
    stats = conn.execute("SELECT doc_count, total_length FROM lex_stats").fetchone()
    return {"postings": postings, "dfs": dfs, "docs": docs, "stats": tuple(stats)}


def rebuilt(store: embedmind.Store, on: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The index as maintained, and as a rebuild from the records makes it (rolled back)."""
    with store._db.write() as conn:
        kept = snapshot(conn)
        conn.execute("SAVEPOINT oracle")
        store._lexical.rebuild(conn, records.next_write_seq(conn), session_context=on)
        fresh = snapshot(conn)
        conn.execute("ROLLBACK TO oracle")
        conn.execute("RELEASE oracle")
    store._lexical.clear_cache()
    return kept, fresh


text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
# Few ids, mostly one dialog: removals and inserts then have neighbours.
ident = st.sampled_from([f"m{i}" for i in range(6)])
op = st.one_of(
    st.tuples(
        st.just("write"), ident, text, st.sampled_from(["a", "a", "b"]),
        st.sampled_from(["s1", "s1", "s2", None]), st.integers(0, 6),
    ),
    st.tuples(st.just("forget"), ident),
    st.tuples(st.just("delete"), ident),
    st.tuples(st.just("supersede"), ident, text),
    st.tuples(st.just("redact"), ident, text),
    st.tuples(st.just("vacuum")),
    st.tuples(st.just("move"), ident, st.sampled_from(["a", "b"])),
)  # fmt: skip


def apply(store: embedmind.Store, step: tuple[Any, ...], made: dict[str, str]) -> None:
    kind = step[0]
    if kind == "write":
        _, mid, content, namespace, session, minute = step
        namespace = made.setdefault(mid, namespace)  # an id stays in its namespace
        draft = embedmind.Draft(
            content, id=mid, namespace=namespace, session_id=session,
            created_at=T0 + dt.timedelta(hours=9 * minute),  # over 3 days: date words differ
        )  # fmt: skip
        store.remember_many([draft])
    elif kind == "forget":
        store.forget(step[1])
    elif kind == "delete":
        store.delete(step[1])
        made.pop(step[1], None)
    elif kind == "vacuum":
        store.vacuum()
    elif kind == "move":
        if step[1] in made:
            store.move([step[1]], made[step[1]], step[2])
            made[step[1]] = step[2]
    else:
        target = store.get(step[1])
        if target is None or (kind == "supersede" and target.superseded_by is not None):
            return
        if kind == "redact":
            store.redact(step[1], step[2])
        else:
            later = max(target.created_at, target.valid_from) + dt.timedelta(seconds=1)
            store.remember(
                step[2], namespace=target.namespace, session_id=target.session_id,
                supersedes=[step[1]], created_at=later, now=later,
            )  # fmt: skip


@given(st.lists(op, min_size=4, max_size=25))
def test_incremental_context_equals_a_rebuild(steps: list[tuple[Any, ...]]) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:  # new: context on
        made: dict[str, str] = {}
        for step in steps:
            apply(store, step, made)
            kept, fresh = rebuilt(store)
            assert kept == fresh, step


def test_a_new_store_finds_a_turn_through_the_question_before_it(tmp_path: Path) -> None:
    path = tmp_path / "dialog.mind"
    turns = ["where do you live now?", "in lisbon, since may", "the weather is nice"]
    with embedmind.Store.open(path, embedder=None) as store:
        assert store.stats().session_context
        store.remember_many(
            [
                embedmind.Draft(t, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
                for i, t in enumerate(turns)
            ]
        )
        found = store.recall("where live", mode="text")
        assert [h.content for h in found][:2] == turns[:2]
        assert found[1].memory.content == turns[1]  # content stays its own
    with embedmind.Store.open(path, embedder=None, session_context=False) as store:
        assert not store.stats().session_context
        assert store.recall("where live", mode="text").ids[1:] == []
    with embedmind.Store.open(path, embedder=None) as store:  # None keeps the setting
        assert not store.stats().session_context
        assert len(store.recall("where live", mode="text")) == 1


@given(st.lists(op, min_size=1, max_size=12))
@settings(max_examples=25, deadline=None)
def test_turning_it_off_and_on_equals_a_rebuild(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:  # hypothesis reuses tmp_path: one per example
        path = Path(folder) / "s.mind"
        with embedmind.Store.open(path, embedder=None) as store:
            made: dict[str, str] = {}
            for step in steps:
                apply(store, step, made)
        with embedmind.Store.open(path, embedder=None, session_context=False) as store:
            kept, fresh = rebuilt(store, on=False)
            assert kept == fresh
        with embedmind.Store.open(path, embedder=None, session_context=True) as store:
            kept, fresh = rebuilt(store, on=True)
            assert kept == fresh


def test_an_old_store_keeps_context_off_until_asked(tmp_path: Path) -> None:
    path = tmp_path / "old.mind"
    # What a store created before this release holds: no switch row.
    with embedmind.Store.open(path, embedder=None) as store, store._db.write() as conn:
        conn.execute("DELETE FROM meta WHERE key = 'lexical.session_context'")
    with embedmind.Store.open(path, embedder=None) as store:
        assert not store.stats().session_context
    with embedmind.Store.open(path, embedder=None, session_context=True) as store:
        assert store.stats().session_context


@pytest.mark.parametrize("value", [1, "on", 0.0])
def test_the_switch_takes_only_a_bool_or_none(tmp_path: Path, value: object) -> None:
    with pytest.raises(embedmind.InvalidInputError, match="session_context"):
        embedmind.Store.open(tmp_path / "x.mind", embedder=None, session_context=value)  # type: ignore[arg-type]
    assert not (tmp_path / "x.mind").exists()  # refused before the file is created


def test_sessionless_memories_are_unchanged_by_the_switch() -> None:
    with embedmind.Store.open(":memory:", embedder=None, session_context=False) as store:
        store.remember_many(["cello recital", "dog at the vet", "cello and dog"])
        with store._db.read() as conn:
            before = snapshot(conn)
        switch(store, True)
        with store._db.read() as conn:
            assert snapshot(conn) == before


def test_redacted_words_leave_the_neighbours_postings(tmp_path: Path) -> None:
    secret = "zq9xsecretword"
    path = tmp_path / "r.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        switch(store, True)
        turns = ["what is the password?", f"it is {secret}", "thanks, noted"]
        written = store.remember_many(
            [
                embedmind.Draft(t, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
                for i, t in enumerate(turns)
            ]
        )
        assert len(store.recall(secret, mode="text")) == 3  # the neighbours hold it as context
        store.redact(written[1].id, "[redacted]")
        assert store.recall(secret, mode="text").ids == []
        kept, fresh = rebuilt(store)
        assert kept == fresh
    term = analyze(secret)[0].encode()
    leaks = {p.name: p.read_bytes().count(term) for p in tmp_path.iterdir() if p.is_file()}
    assert not any(leaks.values()), leaks


def test_moving_a_turn_out_of_its_dialog_keeps_context_exact() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many(
            [
                embedmind.Draft(t, id=t, namespace=ns, session_id="s", created_at=T0)
                for ns, t in (("a", "cello"), ("a", "dog"), ("a", "vet"), ("b", "bees"))
            ]
        )
        store.move(["dog"], "a", "b")
        kept, fresh = rebuilt(store)
        assert kept == fresh
        assert store.recall("bees", mode="text").ids == ["bees", "dog"]  # its new neighbour
        store.rename_namespace("b", "a")
        kept, fresh = rebuilt(store)
        assert kept == fresh


def test_an_upsert_that_changes_only_the_session_moves_the_context() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        switch(store, True)
        for i, (mid, words) in enumerate([("q", "cello recital"), ("a", "may twentieth")]):
            store.remember(words, id=mid, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
        store.remember("may twentieth", id="a", session_id="other")  # same words, new session
        kept, fresh = rebuilt(store)
        assert kept == fresh
        assert store.recall("recital", mode="text").ids == ["q"]


def test_explain_helper_names_the_terms_found_through_context() -> None:
    from embedmind.backend.sqlite.lexical.context import context_terms

    with embedmind.Store.open(":memory:", embedder=None, session_context=False) as store:
        turns = ["where do you live now?", "in lisbon, since may"]
        written = store.remember_many(
            [
                embedmind.Draft(t, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
                for i, t in enumerate(turns)
            ]
        )
        answer = written[1]
        with store._db.read() as conn:
            (row,) = conn.execute("SELECT key FROM memories WHERE id = ?", (answer.id,))
            assert context_terms(conn, row[0], answer.content, "where live lisbon") == ()
        switch(store, True)
        with store._db.read() as conn:
            found = context_terms(conn, row[0], answer.content, "where live lisbon")
        assert found == tuple(analyze("live"))


def test_explain_names_the_query_terms_a_hit_matched_through_its_neighbours() -> None:
    from embedmind.cli.render import recall_lines

    with embedmind.Store.open(":memory:", embedder=None) as store:
        turns = ["where do you live now?", "in lisbon, since may"]
        store.remember_many(
            [
                embedmind.Draft(t, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
                for i, t in enumerate(turns)
            ]
            + ["lisbon trams are yellow"]
        )
        switch(store, True)
        found = store.recall("where live lisbon", mode="text", explain=True)
        via = {h.content: h.channels["text"].via_context for h in found}
        assert via == {
            turns[0]: tuple(analyze("lisbon")),  # through the answer after it
            turns[1]: tuple(analyze("where live")),  # found through the question
            "lisbon trams are yellow": (),  # no session, no context
        }
        lines = "\n".join(recall_lines(found, explain=True))
        assert f"via context: {', '.join(analyze('where live'))}" in lines
        plain = store.recall("where live lisbon", mode="text")
        assert all(h.channels["text"].via_context == () for h in plain)  # explain only
        switch(store, False)
        off = store.recall("where live lisbon", mode="text", explain=True)
        assert all(h.channels["text"].via_context == () for h in off)


def test_detach_and_attach_keep_context_exact_across_a_namespace_move() -> None:
    # What Store.move does (tested through it above), step by step.
    with embedmind.Store.open(":memory:", embedder=None) as store:
        switch(store, True)
        store.remember_many(
            [
                embedmind.Draft(t, id=t, namespace=ns, session_id="s", created_at=T0)
                for ns, t in (("a", "cello"), ("a", "dog"), ("a", "vet"), ("b", "bees"))
            ]
        )
        with store._db.write() as conn:
            (row,) = conn.execute("SELECT key FROM memories WHERE id = 'dog'")
            version = records.next_write_seq(conn)
            moved = store._lexical.detach(conn, [row[0]], version)
            conn.execute("UPDATE memories SET namespace = 'b' WHERE key = ?", (row[0],))
            store._lexical.attach(conn, moved, version)
        kept, fresh = rebuilt(store)
        assert kept == fresh
