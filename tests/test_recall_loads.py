"""One recall reads each memory once, whatever ranking features need it."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

import embedmind
from embedmind.backend.sqlite.session import SqliteRecords
from embedmind.embedders.hashing import HashingEmbedder


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
def test_dates_latest_recency_and_hits_share_one_load(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t0 = dt.datetime(2023, 5, 1, tzinfo=dt.timezone.utc)
    texts = [f"Bob lives in town {i} now, he said" for i in range(30)]
    loaded: Counter[int] = Counter()
    original = SqliteRecords.load

    def counting(self: SqliteRecords, keys: Sequence[int]) -> Any:
        loaded.update(keys)
        return original(self, keys)

    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(dims=16)) as store:
        store.remember_many(
            [
                embedmind.Draft(text, created_at=t0 + dt.timedelta(days=i))
                for i, text in enumerate(texts)
            ]
        )
        plain = store.recall("where does Bob live now? on 8 May, 2023", k=10, mode=mode)
        monkeypatch.setattr(SqliteRecords, "load", counting)
        result = store.recall(
            "where does Bob live now? on 8 May, 2023",
            k=10,
            mode=mode,
            temporal=True,
            latest=True,
            recency=True,
        )
    assert len(result) == len(plain) == 10
    assert loaded and max(loaded.values()) == 1, loaded.most_common(3)
