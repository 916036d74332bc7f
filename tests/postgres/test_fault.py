"""The server dies under load and comes back: typed errors, nothing acknowledged lost, no reopen.

A server of its own (so the session's shared one is never stopped), with
``synchronous_commit = on`` — an acknowledged commit is then in the WAL before
the client hears of it, as on a production server. Writer threads remember
memories (one transaction each: row, text index, vector), reader threads
recall by text and vector, all through one open :class:`PostgresBackend`.
The server is stopped in ``immediate`` mode (a crash: connections cut mid
statement), stays down for a while, and is started again (crash recovery
from the WAL). Then:

* every exception any thread saw is an :class:`embedmind.errors.StorageError`
  (never a raw psycopg or pool exception), and some were seen — the outage
  did hit calls in flight;
* every write whose block ended without an error is stored, once;
* writes and reads succeed again on the same backend object (the pool
  reconnects by itself), and a memory written after the restart is found by
  the text and vector channels.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from embedmind.backend.postgres.backend import FACTORY, PostgresBackend
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.values import OpenOptions
from embedmind.drafts import prepare
from embedmind.errors import StorageError, StoreBusyError
from embedmind.model import Draft
from embedmind.query.selection import Selection

# Serial pass of `make test` (not beside other tests): halts this worker's server for timed seconds under threaded load.
pytestmark = pytest.mark.serial

DIMS = 4
NOW = 10**15
BUSY_TIMEOUT = 2.0
WRITERS, READERS = 2, 2
BEFORE, DOWN, AFTER = 1.0, 1.5, 2.5  # seconds of load around the outage


@pytest.fixture(scope="module")
def server() -> Iterator[ThrowawayServer]:
    with ThrowawayServer.start(settings={"synchronous_commit": "on"}) as s:
        s.create_database("fault")
        yield s


def _vector(i: int) -> bytes:
    v = np.asarray([1.0, (i % 7) + 0.5, (i % 3) + 0.1, 0.2], dtype=np.float32)
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


def _remember(
    backend: PostgresBackend, memory_id: str, content: str, i: int, vector: bytes | None = None
) -> None:
    with backend.write() as w:
        key = w.records.insert(prepare(Draft(content, id=memory_id, namespace="load"), NOW + i))
        w.records.index_text([(key, content)])
        w.records.put_vectors(key, [(0, len(content))], [vector or _vector(i)])


class Load:
    """Writer and reader threads, recording what was acknowledged and what was raised."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged: list[tuple[float, str]] = []
        self.attempted: set[str] = set()
        self.errors: list[tuple[float, BaseException]] = []
        self.reads_ok: list[float] = []
        self.threads = [
            threading.Thread(target=self._writer, args=(n,)) for n in range(WRITERS)
        ] + [threading.Thread(target=self._reader) for _ in range(READERS)]

    def _failed(self, exc: BaseException) -> None:
        with self.lock:
            self.errors.append((time.monotonic(), exc))
        time.sleep(0.05)

    def _writer(self, n: int) -> None:
        i = 0
        while not self.stop.is_set():
            memory_id = f"w{n}-{i}"
            with self.lock:
                self.attempted.add(memory_id)
            try:
                _remember(self.backend, memory_id, f"writer {n} note {i} about tea", i)
            except BaseException as exc:  # the test classifies every exception
                self._failed(exc)
            else:
                with self.lock:
                    self.acknowledged.append((time.monotonic(), memory_id))
            i += 1

    def _reader(self) -> None:
        query = np.frombuffer(_vector(3), dtype="<f4")
        while not self.stop.is_set():
            try:
                with self.backend.read() as r:
                    selection = Selection.of(NOW + 10**9, "load")
                    r.channels.text_top("tea note", selection, 10)
                    r.channels.vector_top(query, selection, 10)
                    r.records.live_count()
            except BaseException as exc:
                self._failed(exc)
            else:
                with self.lock:
                    self.reads_ok.append(time.monotonic())

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=BUSY_TIMEOUT * 5)
        assert not any(t.is_alive() for t in self.threads), "a thread hung"


def test_a_server_restart_under_load(server: ThrowawayServer) -> None:
    url = server.url("fault") + "?schema=fault&connect_timeout=2"
    backend = FACTORY.open(OpenOptions(url, busy_timeout=BUSY_TIMEOUT))
    try:
        with backend.write() as w:
            w.meta.write_identity({"model_id": "t", "dims": str(DIMS), "metric": "cosine"})
        with Load(backend) as load:
            time.sleep(BEFORE)
            server.halt("immediate")
            halted = time.monotonic()
            time.sleep(DOWN)
            server.resume()
            resumed = time.monotonic()
            time.sleep(AFTER)
        raw = [e for _, e in load.errors if not isinstance(e, StorageError)]
        assert not raw, f"raw exceptions escaped: {raw[:3]!r}"
        assert load.errors, "the outage hit no call in flight: the test tested nothing"
        # A server that is down is not reported as a busy store.
        assert not [e for _, e in load.errors if isinstance(e, StoreBusyError)]
        assert any(t < halted for t, _ in load.acknowledged)
        assert any(t > resumed for t, _ in load.acknowledged), "writes did not come back"
        assert any(t > resumed for t in load.reads_ok), "reads did not come back"
        acknowledged = [i for _, i in load.acknowledged]
        with backend.read() as r:
            stored = r.records.find_many(sorted(load.attempted))
            assert r.records.live_count() == len(stored)
        assert set(acknowledged) <= set(stored), "an acknowledged write was lost"
        assert len(acknowledged) == len(set(acknowledged))
        # The same backend object serves a fresh memory on both channels.
        alone = np.asarray([0, 0, 0, 1], dtype="<f4")  # no load vector is near it
        _remember(backend, "after", "a zebra crossing after the restart", 10**6, alone.tobytes())
        with backend.read() as r:
            key = r.records.find("after").key
            selection = Selection.of(NOW + 10**9, "load")
            assert r.channels.text_top("zebra", selection, 3)[0][0] == key
            assert r.channels.vector_top(alone, selection, 3)[0].key == key
    finally:
        backend.close()
