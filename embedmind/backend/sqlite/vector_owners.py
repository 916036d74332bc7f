"""Which memory each vector belongs to, held in memory beside the HNSW graph.

The graph answers with vec_keys; admission needs the memory keys. Reading
them from the vector table costs one B-tree lookup per candidate in a table
whose rows carry the vectors themselves (about 1.5 KB each: 164 MB at 100k
vectors, far past the page cache), so at 100k that lookup cost about as much
as the graph search it follows (measured: 6 ms of 16 per recall on a loaded
machine). This map answers from a numpy array indexed by vec_key instead.

A graph loaded from its file comes with no owners, and each search looked up
its 80 candidates' owners, 80 random reads, for as many searches as it took
to meet most vectors: at 1M vectors a new process's vector phase took 3.0-3.2
ms at p50 over its first 400 searches against 2.2-2.6 ms with every owner
known (5.8 ms when those rows were not in the page cache). So the load learns
every owner in one scan of the table's index on ``key``
(:meth:`OwnerMap.learn_all`: 0.7 s at 1M, against 1.2 s to read and restore
the graph).

It is only ever taught committed truth, which never changes: a vec_key is
assigned once (``AUTOINCREMENT``) and a vector row is never moved to another
memory, only deleted. Inside a write transaction the rows seen may be that
transaction's own, whose vec_keys SQLite hands out again if it rolls back, so
nothing is learned there. A vec_key the map does not know is looked up in
SQLite (and learned, outside a write transaction); one whose row the snapshot
does not see has no owner, as before.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Sequence

import apsw
import numpy as np
import numpy.typing as npt

from embedmind.backend.sqlite.vector_rows import MEMORY, Space

UNKNOWN = 0
"""The owner of a vec_key not learned yet (memory keys start at 1)."""


def committed_view(conn: apsw.Connection) -> bool:
    """Whether every row ``conn`` sees is committed (it is not inside a write transaction)."""
    return bool(conn.txn_state("main") != apsw.SQLITE_TXN_WRITE)


class OwnerMap:
    """vec_key -> memory key for one vector space, learned from committed rows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: npt.NDArray[np.int64] = np.zeros(0, np.int64)

    def __len__(self) -> int:
        """How many vec_keys have a known owner (diagnostics and tests)."""
        return int(np.count_nonzero(self._owners))

    def learn(self, conn: apsw.Connection, vec_keys: npt.ArrayLike, keys: npt.ArrayLike) -> None:
        """Record ``vec_keys[i]`` as owned by ``keys[i]`` (when ``conn`` sees committed rows)."""
        if not committed_view(conn):
            return
        vecs = np.asarray(vec_keys, dtype=np.int64)
        owners = np.asarray(keys, dtype=np.int64)
        if not len(vecs):
            return
        with self._lock:
            top = int(vecs.max())
            if top >= len(self._owners):
                grown = np.zeros(max(top + 1, 2 * len(self._owners)), np.int64)
                grown[: len(self._owners)] = self._owners
                self._owners = grown
            self._owners[vecs] = owners

    def learn_all(self, conn: apsw.Connection, space: Space = MEMORY) -> None:
        """Learn the owner of every vector ``conn`` sees (when it sees committed rows).

        Reads the index on ``key``, which holds each row's vec_key too: 14 MB at
        1M vectors, where the table's rows carry 1.6 GB of vectors.
        """
        if not committed_view(conn):
            return
        rows = conn.execute(f"SELECT vec_key, key FROM {space.table}")
        pairs = np.fromiter(itertools.chain.from_iterable(rows), np.int64).reshape(-1, 2)
        self.learn(conn, pairs[:, 0], pairs[:, 1])

    def owners(
        self, conn: apsw.Connection, vec_keys: npt.NDArray[np.int64], space: Space = MEMORY
    ) -> npt.NDArray[np.int64]:
        """The memory key of each of ``vec_keys`` as ``conn`` sees it; :data:`UNKNOWN` for none."""
        vecs = np.asarray(vec_keys, dtype=np.int64)
        table = self._owners  # grown by replacement, so this reference stays consistent
        found = np.zeros(len(vecs), np.int64)
        inside = (vecs >= 0) & (vecs < len(table))
        found[inside] = table[vecs[inside]]
        unknown = np.flatnonzero(found == UNKNOWN)
        if len(unknown):
            asked = vecs[unknown].tolist()
            looked_up = _look_up(conn, asked, space)
            if looked_up:
                self.learn(conn, list(looked_up), list(looked_up.values()))
                found[unknown] = [looked_up.get(v, UNKNOWN) for v in asked]
        return found


def _look_up(conn: apsw.Connection, vec_keys: Sequence[int], space: Space) -> dict[int, int]:
    """The owners SQLite holds for ``vec_keys`` (rows the snapshot does not see are left out)."""
    sql = (
        f"SELECT vec_key, key FROM {space.table} WHERE vec_key IN (SELECT value FROM json_each(?))"
    )
    return {int(a): int(b) for a, b in conn.execute(sql, (json.dumps(list(vec_keys)),))}
