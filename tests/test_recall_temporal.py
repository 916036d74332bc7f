"""``Store.recall(temporal=True)``: dates named in the query move in-window memories up."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

UTC = dt.timezone.utc
T0 = dt.datetime(2023, 1, 1, tzinfo=UTC)


def _hikes(date_words: bool | None = None) -> embedmind.Store:
    store = embedmind.Store.open(":memory:", embedder=None, date_words=date_words)
    # Fewer than the fusion depth and all tied on BM25, so every one is a candidate.
    store.remember_many(
        [
            embedmind.Draft(
                f"we went hiking together trip {i}", id=f"t{i}",
                created_at=T0 + dt.timedelta(days=14 * i),
            )
            for i in range(15)
        ]
    )  # fmt: skip
    return store


def test_a_named_month_moves_its_memories_up_only_when_asked() -> None:
    query = "where did we go hiking in July 2023?"
    # Date words off: with them "july" already matches July's memories by text
    # (the next test), and this one isolates what the temporal window adds.
    with _hikes(date_words=False) as store:
        july = {
            m.id
            for m in store.iter()
            if dt.datetime(2023, 6, 21, tzinfo=UTC)
            <= m.created_at
            < dt.datetime(2023, 8, 11, tzinfo=UTC)
        }
        plain = store.recall(query, mode="text", k=15)
        dated = store.recall(query, mode="text", k=15, temporal=True)
        assert july and set(plain.ids[: len(july)]) != july  # not already first
        assert set(dated.ids[: len(july)]) == july
        assert set(dated.ids) == set(plain.ids)  # nothing brought in
        assert "dates" in dated.channels and "dates" not in plain.channels
        for k in (1, 3, 10):  # still a prefix of the longer answer
            assert store.recall(query, mode="text", k=k, temporal=True).ids == dated.ids[:k]


def test_with_date_words_a_named_month_moves_its_memories_up_unasked() -> None:
    query = "where did we go hiking in July 2023?"
    with _hikes() as store:  # date words on: a new store's default
        # Inside the padded window (21 June - 10 August) but not in July: only temporal finds it.
        store.remember(
            "we went hiking together trip 15", id="june",
            created_at=dt.datetime(2023, 6, 25, tzinfo=UTC),
        )  # fmt: skip
        july = {m.id for m in store.iter() if (m.created_at.year, m.created_at.month) == (2023, 7)}
        window = july | {"june"}
        plain = store.recall(query, mode="text", k=16)
        dated = store.recall(query, mode="text", k=16, temporal=True)
        assert july and set(plain.ids[: len(july)]) == july  # by text alone: "july" is indexed
        assert "june" not in plain.ids[: len(window)]
        assert set(dated.ids[: len(window)]) == window  # the window adds its padding
        assert set(dated.ids) == set(plain.ids)  # nothing brought in
        assert "dates" in dated.channels and "dates" not in plain.channels


def test_a_relative_date_counts_from_now() -> None:
    query = "where did we go hiking 2 weeks ago?"
    with _hikes() as store:
        at = T0 + dt.timedelta(days=14 * 9 + 14)  # two weeks after t9
        first = store.recall(query, mode="text", k=3, temporal=True, now=at).ids
        assert "t9" in first
        assert store.recall(query, mode="text", k=3, temporal=True).ids == (
            store.recall(query, mode="text", k=3).ids  # "2 weeks ago" from today: no memory
        )


WORDS = ["hiking", "trip", "dog", "cello", "may", "july", "job", "lisbon", "8", "week", "hike"]
query_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(
    contents=st.lists(query_words, min_size=1, max_size=25),
    days=st.lists(st.integers(0, 400), min_size=25, max_size=25),
    sessions=st.lists(st.sampled_from(["s1", "s2", None]), min_size=25, max_size=25),
    query=query_words,
    k=st.integers(1, 30),
    mode=st.sampled_from(["text", "hybrid", "vector"]),
)
def test_a_query_without_a_date_is_unchanged_by_temporal(
    contents: list[str], days: list[int], sessions: list[str | None], query: str, k: int, mode: str
) -> None:
    # WORDS hold month and number words, but never a day or month with its
    # year, nor a relative form: the query names no date.
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(32)) as store:
        store.remember_many(
            [
                embedmind.Draft(c, session_id=s, created_at=T0 + dt.timedelta(days=d))
                for c, d, s in zip(contents, days, sessions, strict=False)
            ]
        )
        now = T0 + dt.timedelta(days=200)
        plain = store.recall(query, k=k, mode=mode, now=now)
        dated = store.recall(query, k=k, mode=mode, now=now, temporal=True)
        assert dated == plain


@pytest.mark.parametrize("query", ["in May 0000", "in December 9999", "on 1 January 0001"])
def test_a_date_at_the_ends_of_the_calendar_does_not_raise(query: str) -> None:
    with _hikes() as store:
        assert store.recall(query, mode="text", temporal=True).ids == (
            store.recall(query, mode="text").ids
        )
