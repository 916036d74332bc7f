"""Checking a channel's candidates against the filter reads each one's row by its key."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from query_plans import plan, traced

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

DIMS = 16


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_candidates_are_checked_by_key_even_under_a_namespace(mode: str) -> None:
    # The text channel's check let SQLite walk the namespace's index instead:
    # text recalls in a namespace of 1M memories took 129 ms at p50, not 3.7.
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        store.remember_many(
            [
                embedmind.Draft(f"note {i} on parks and budgets", namespace="ab"[i % 2])
                for i in range(600)
            ]
        )
        hits: list[Any] = []

        def recall() -> None:
            query = np.ones(DIMS, dtype=np.float32)
            hits.extend(store.recall("parks budgets", mode=mode, vector=query, namespace="a"))

        with store._db.read() as conn:
            checks = [
                plan(conn, sql, bindings)
                for sql, bindings in traced(conn, recall)
                if "json_each" in sql and "memories" in sql
            ]
    assert hits and {hit.memory.namespace for hit in hits} == {"a"}
    assert checks
    for steps in checks:  # by key, never a walk of an index of memories
        assert "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)" in steps, steps
        assert not [step for step in steps if "memories_by_" in step], steps
