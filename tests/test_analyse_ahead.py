"""A batch's texts are analysed on a worker thread while its rows are inserted.

The postings it leaves are those of the analysis in line
(``tests/test_bulk_equivalence.py`` runs both ways); here: which thread
analyses, and that an analysis made ahead is used only for the very texts
and alias table it was made for.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

import embedmind
from embedmind.backend.sqlite import records, session_writes
from embedmind.backend.sqlite.lexical import index as lexical_index
from embedmind.lexical.aliases import Fields, Table, fields_many


def _threads_analysing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []

    def recorded(texts: Sequence[str], table: Table) -> list[Fields]:
        names.append(threading.current_thread().name)
        return fields_many(texts, table)

    monkeypatch.setattr(lexical_index, "fields_many", recorded)
    return names


@pytest.mark.parametrize("chunk_chars", [records.JSON_CHUNK_CHARS, 100])
def test_a_large_batch_is_analysed_on_a_worker_and_a_small_one_in_line(
    monkeypatch: pytest.MonkeyPatch, chunk_chars: int
) -> None:
    monkeypatch.setattr(records, "JSON_CHUNK_CHARS", chunk_chars)  # one insert, or several
    names = _threads_analysing(monkeypatch)
    rows = session_writes.ANALYSE_AHEAD_ROWS
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many([f"note {i} about tea" for i in range(rows)])
        store.remember_many([f"note {i} about cake" for i in range(rows - 1)])
        assert {h.content for h in store.recall("cake", k=rows, mode="text").hits} == {
            f"note {i} about cake" for i in range(rows - 1)
        }
    assert len(names) == 2
    assert names[0].startswith("embedmind-worker")
    assert names[1] == threading.current_thread().name


def test_an_analysis_ahead_serves_only_its_own_texts_under_its_own_table() -> None:
    table = Table.compile([("nyc", "new york")])
    texts = ["i moved to nyc", "a dog"]
    ahead = lexical_index.Ahead(texts, table, lambda: fields_many(texts, table))
    docs = list(enumerate(texts))
    assert ahead.fields_of(docs, table) == fields_many(texts, table)
    assert ahead.fields_of(docs, Table.compile([("nyc", "new york")])) is None  # a table since
    assert ahead.fields_of(docs[:1], table) is None
    assert ahead.fields_of([(0, texts[0]), (1, "a cat")], table) is None
    assert ahead.fields_of(docs[::-1], table) is None
