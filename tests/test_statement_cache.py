"""A store alternating writes and recalls compiles its statements once.

apsw's statement cache evicts by use: every execution, each ``executemany``
row included, takes the next slot of a ring. The connection's cache must be
large enough that a message-sized write between two recalls evicts none of
the statements the next recall runs.
"""

from __future__ import annotations

from pathlib import Path

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

WORDS = (
    "harbor lantern violin meadow copper orbit pepper canvas river stone garden lamp "
    "falcon tundra glacier saffron quartz willow ember cobalt thistle marble nectar "
    "prairie velvet juniper opal cedar sparrow basalt"
).split()


def _message(i: int) -> str:
    """A 34-word chat message whose words shift with ``i`` (new terms keep arriving)."""
    return " ".join(f"{WORDS[(i + j) % len(WORDS)]}{(i * j) % 7}" for j in range(34))


def test_a_recall_after_each_remember_compiles_nothing_again(tmp_path: Path) -> None:
    with embedmind.Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(16)) as store:
        store.remember_many([_message(i) for i in range(200)])

        def cycle(i: int) -> None:
            store.remember(_message(1000 + i))
            store.recall(_message(i)[:60], k=5)

        for i in range(3):  # every statement of the loop compiled once
            cycle(i)
        with store._backend.database.connections.connection() as conn:
            before = conn.cache_stats()["misses"]
            for i in range(3, 13):
                cycle(i)
            assert conn.cache_stats()["misses"] == before, "statements compiled again"
