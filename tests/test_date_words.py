"""Date words: a memory's ``created_at`` day, month name and year are index terms.

Each memory's postings are compared with a derivation from scratch written
here from the rule (``embedmind.lexical.dates``): its text is its content then
its UTC date written "7 May 2023"; a memory with dialog neighbours is
``2 × its text + the previous turn's text + the next turn's text``. The
postings are read from each backend's tables; the other tests run through the
public API. ``tests/postgres/test_conformance_date_words.py`` runs them all on
PostgreSQL too. Every write path keeping them exact is checked against a
rebuild by ``test_session_context.py`` (SQLite) and ``test_alias_postings.py``
(PostgreSQL), whose stores have date words on.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_session_context import snapshot

import embedmind
from embedmind.errors import InvalidInputError
from embedmind.lexical.analyzer import analyze

UTC = dt.timezone.utc
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip
WORDS = ["caroline", "support", "group", "painted", "sunrise", "may", "lake", "adoption"]


def words_of(at: dt.datetime) -> str:
    """A date as a question would write it, in UTC."""
    day = at.astimezone(UTC)
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def expected(memories: list[embedmind.Memory], *, dates: bool) -> dict[str, Counter[str]]:
    """Each live memory's term counts, derived from scratch (no alias table)."""
    own = {
        m.id: Counter(analyze(f"{m.content} {words_of(m.created_at)}" if dates else m.content))
        for m in memories
    }
    dialogs: dict[tuple[str, str], list[embedmind.Memory]] = defaultdict(list)
    for m in memories:
        if m.session_id is not None:
            dialogs[(m.namespace, m.session_id)].append(m)
    out = {m.id: own[m.id] for m in memories}
    for turns in dialogs.values():
        if len(turns) < 2:
            continue
        # Write order breaks ties of created_at: the memories are listed in it.
        turns.sort(key=lambda m: m.created_at)
        for i, m in enumerate(turns):
            counts = Counter({t: 2 * tf for t, tf in own[m.id].items()})
            for j in (i - 1, i + 1):
                if 0 <= j < len(turns):
                    counts.update(own[turns[j].id])
            out[m.id] = counts
    return {mid: counts for mid, counts in out.items() if counts}


def indexed(store: embedmind.Store) -> dict[str, Counter[str]]:
    """Each indexed memory's postings as term counts, read from the backend's tables."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    if type(store._backend).__module__.startswith("embedmind.backend.sqlite"):
        with store._db.write() as conn:
            ids = {int(k): str(i) for k, i in conn.execute("SELECT key, id FROM memories")}
            for key, (_, terms, _) in snapshot(conn)["docs"].items():
                counts[ids[key]].update(dict(terms))
        return dict(counts)
    with store._backend.write() as w:  # type: ignore[attr-defined]
        rows = w.conn.execute(
            "SELECT m.id, p.term, p.tf FROM lex_postings p JOIN memories m ON m.key = p.key"
        ).fetchall()
    for mid, term, tf in rows:
        counts[str(mid)][str(term)] += int(tf)
    return dict(counts)


def live(store: embedmind.Store, ids: list[str]) -> list[embedmind.Memory]:
    return [m for m in (store.get(i) for i in ids) if m is not None]


# Instants around midnight UTC in several offsets: the date words are the UTC day's.
instants = st.sampled_from(
    [
        dt.datetime(2023, 5, 7, 9, 0, tzinfo=UTC),
        dt.datetime(2023, 5, 8, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),  # 7 May
        dt.datetime(2023, 5, 7, 22, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5))),  # 8 May
        dt.datetime(2024, 1, 31, 12, 0, tzinfo=UTC),
        dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
    ]
)
drafts = st.lists(
    st.tuples(
        st.sampled_from([f"m{i}" for i in range(6)]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        st.sampled_from(["s1", "s1", "s2", None]),
        instants,
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None)
@given(drafts, st.booleans())
def test_postings_hold_the_date_words_exactly(batch: list[Any], context: bool) -> None:
    with embedmind.Store.open(":memory:", embedder=None, session_context=context) as store:
        for mid, content, session, at in batch:
            store.remember(content, id=mid, session_id=session, created_at=at)
        # In write order (an upsert keeps the memory's place and created_at).
        memories = live(store, list(dict.fromkeys(b[0] for b in batch)))
        if not context:
            memories = [dataclasses.replace(m, session_id=None) for m in memories]
        assert indexed(store) == expected(memories, dates=True)


def test_a_question_naming_the_date_finds_the_memory_said_that_day() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        days = [dt.datetime(2023, 5, d, 14, 0, tzinfo=UTC) for d in (6, 7, 8)]
        for i, at in enumerate(days):
            for j, text in enumerate(["we went to the lake", "she painted a sunrise"]):
                store.remember(text, id=f"d{i}-{j}", session_id=f"s{i}", created_at=at)
        hits = store.recall("what happened on 7 May 2023", mode="text", k=2)
        assert {h.id for h in hits} == {"d1-0", "d1-1"}
        # Index terms only: the content is the memory's, and no term came from a neighbour.
        top = store.recall("7 May 2023", mode="text", k=1, explain=True)[0]
        assert top.content in ("we went to the lake", "she painted a sunrise")
        assert top.channels["text"].via_context == ()


def test_a_store_without_date_words_indexes_its_text_alone(tmp_path: Path) -> None:
    path = tmp_path / "plain.mind"
    at = dt.datetime(2023, 5, 7, 14, 0, tzinfo=UTC)
    with embedmind.Store.open(path, embedder=None, date_words=False) as store:
        store.remember("the lake", id="a", created_at=at)
        store.remember("a sunrise", id="b", session_id="s", created_at=at)
        store.remember("the dog", id="c", session_id="s", created_at=at)
        assert indexed(store) == expected(live(store, ["a", "b", "c"]), dates=False)
        assert len(store.recall("7 May 2023", mode="text")) == 0
    with embedmind.Store.open(path, embedder=None) as store:  # None keeps the setting
        assert len(store.recall("7 May 2023", mode="text")) == 0
    with embedmind.Store.open(path, embedder=None, date_words=True) as store:  # re-indexes
        assert indexed(store) == expected(live(store, ["a", "b", "c"]), dates=True)
        assert len(store.recall("7 May 2023", mode="text")) == 3
        store.remember("the lake again", id="d", created_at=at)
        assert indexed(store) == expected(live(store, ["a", "b", "c", "d"]), dates=True)


@pytest.mark.parametrize("value", [1, "yes", 0.0])
def test_the_option_takes_only_a_bool_or_none(value: object) -> None:
    with pytest.raises(InvalidInputError, match="date_words"):
        embedmind.Store.open(":memory:", embedder=None, date_words=value)  # type: ignore[arg-type]


def test_redacting_keeps_the_date_words_and_drops_the_words() -> None:
    at = dt.datetime(2023, 5, 7, 14, 0, tzinfo=UTC)
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember("caroline adoption plans", id="a", session_id="s", created_at=at)
        store.remember("painted a sunrise", id="b", session_id="s", created_at=at)
        store.redact("a", "[redacted]")
        assert indexed(store) == expected(live(store, ["a", "b"]), dates=True)
        assert [h.id for h in store.recall("adoption", mode="text")] == []
