"""Dates named in a query: the parser, and the fused list that moves in-window candidates up."""

from __future__ import annotations

import datetime as dt

import pytest

import embedmind
from embedmind.cli import demo
from embedmind.query_dates import PAD_DAYS, windows

UTC = dt.timezone.utc
PAD = dt.timedelta(days=PAD_DAYS)


def day(y: int, m: int, d: int) -> dt.datetime:
    return dt.datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did Gina find on 1 February, 2023?", day(2023, 2, 1), day(2023, 2, 2)),
        ("painting shown on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 14)),
        ("who came on 3rd June 2023", day(2023, 6, 3), day(2023, 6, 4)),
        ("What setback did she face in October 2023?", day(2023, 10, 1), day(2023, 11, 1)),
        ("the class she started in December 2023", day(2023, 12, 1), day(2024, 1, 1)),
    ],
)
def test_absolute_dates(query: str, start: dt.datetime, end: dt.datetime) -> None:
    assert windows(query) == [(start - PAD, end + PAD)]


@pytest.mark.parametrize(
    "query",
    ["what is bob's job?", "how many times in 2023?", "camping in June?", "on 31 February, 2023",
     *demo.QUESTIONS],
)  # fmt: skip
def test_no_date_no_window(query: str) -> None:
    assert windows(query) == []


def test_relative_forms_need_now() -> None:
    now = dt.datetime(2023, 5, 10, 15, 0, tzinfo=UTC)
    assert windows("what did John do yesterday?") == []
    (window,) = windows("what did John do yesterday?", now=now)
    assert window == (day(2023, 5, 9) - PAD, day(2023, 5, 10) + PAD)
    (ago,) = windows("the trip 2 weeks ago", now=now)
    assert ago[0] == day(2023, 4, 26) - PAD


def _store() -> embedmind.Store:
    store = embedmind.Store.open(":memory:", embedder=None)
    # Fewer than the fusion depth: every memory is a candidate (they all tie on BM25).
    texts = [f"we went hiking together trip {i}" for i in range(15)]
    store.remember_many(
        [
            embedmind.Draft(t, id=f"t{i}", created_at=day(2023, 1, 1) + dt.timedelta(days=14 * i))
            for i, t in enumerate(texts)
        ]
    )
    return store


def test_a_named_date_moves_in_window_candidates_up_and_adds_none() -> None:
    query = "where did we go hiking in July 2023?"
    with _store() as store:
        plain = store.recall(query, mode="text", k=15).ids
        found = windows(query)
        dated = store.recall(query, mode="text", k=15, temporal=True)
        assert set(dated.ids) == set(plain)  # nothing brought in
        july = {m.id for m in store.iter() if found[0][0] <= m.created_at < found[0][1]}
        assert july and set(dated.ids[: len(july)]) == july
        assert "dates" in dated.channels
        for k in (1, 3, 10):  # still a prefix of the longer answer
            assert store.recall(query, mode="text", k=k, temporal=True).ids == dated.ids[:k]
