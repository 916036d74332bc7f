"""Writers that collide in the server: a typed, retryable error, never "check the server".

Two write sessions forced into the two collisions READ COMMITTED leaves to the
server: a deadlock (each holds a row the other asks for) and one new id
inserted by both. Either ends one transaction, and the backend says so with
``ConcurrentWriteError`` (a ``StoreBusyError`` whose message says to retry),
which the engine runs again (``tests/test_write_races.py`` races it through
the public API); before, both left as ``StorageError`` ("check that the
server is up and reachable").
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from backends import open_backend

from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.protocol import ConcurrentWriteError
from embedmind.drafts import prepare
from embedmind.errors import StoreBusyError
from embedmind.model import Draft

NOW = 10**15


@pytest.fixture(scope="module")
def backend(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator[Any]:
    b = open_backend(pg_server, pg_dsn, "conflicts", 4)
    yield b
    b.close()


def _insert(session: Any, memory_id: str) -> None:
    session.records.insert_many([prepare(Draft(f"memory {memory_id}", id=memory_id), NOW)])


def _in_thread(work: Any) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``work`` on a thread; the list gets what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as e:  # handed to the test
            raised.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, raised


def _assert_retryable(errors: list[BaseException], reason: str) -> None:
    assert len(errors) == 1, errors
    error = errors[0]
    assert isinstance(error, ConcurrentWriteError) and isinstance(error, StoreBusyError)
    assert reason in str(error) and "retry it" in str(error), str(error)
    assert "server is up" not in str(error)


def test_a_deadlock_between_writers_is_a_concurrent_write_error(backend: Any) -> None:
    with backend.write() as w:
        _insert(w, "d1")
        _insert(w, "d2")
    second_holds = threading.Event()

    def second() -> None:
        with backend.write() as w:
            w.records.find("d2")
            second_holds.set()
            w.records.find("d1")  # waits for the first, which asks for d2: a deadlock

    errors: list[BaseException] = []
    try:
        with backend.write() as w:
            w.records.find("d1")
            thread, raised = _in_thread(second)
            assert second_holds.wait(timeout=30)
            w.records.find("d2")
    except ConcurrentWriteError as e:  # the server may end either transaction
        errors.append(e)
    thread.join(timeout=60)
    _assert_retryable(errors + raised, "deadlock")


def test_one_new_id_inserted_by_two_writers_is_a_concurrent_write_error(backend: Any) -> None:
    with backend.write() as w:
        _insert(w, "n1")  # not committed yet: the second insert waits for it
        thread, raised = _in_thread(lambda: _insert_in_a_write(backend, "n1"))
        thread.join(timeout=0.3)
        assert thread.is_alive()
    thread.join(timeout=60)
    _assert_retryable(raised, "the same id")


def _insert_in_a_write(backend: Any, memory_id: str) -> None:
    with backend.write() as w:
        _insert(w, memory_id)


class _PausedAfterFirst:
    """A connection that runs ``meanwhile`` right after its first statement, then goes on."""

    def __init__(self, conn: Any, meanwhile: Any) -> None:
        self._conn = conn
        self._meanwhile = meanwhile
        self._ran = False

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        result = self._conn.execute(*args, **kwargs)
        if not self._ran:
            self._ran = True
            self._meanwhile()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_name_being_linked_is_not_pruned_by_a_concurrent_upsert(backend: Any) -> None:
    """A writer linking an entity name and another pruning it (its last user re-authored).

    The pruner runs between the linker's two statements (the name made sure of,
    then the link to it). It must wait for the linker's commit and then see the
    link; deleting the name there left the link nothing to point at, and the
    linked memory silently lost its entity.
    """
    with backend.write() as w:
        _insert(w, "last-user")
        _insert(w, "linker")
        w.graph.add_entities(w.records.find("last-user").key, ["Shared Name"])
    pruning: list[threading.Thread] = []

    def prune() -> None:
        with backend.write() as w:
            w.graph.replace_outgoing(w.records.find("last-user").key, keep_kind="supersedes")

    def start_pruning() -> None:
        thread, raised = _in_thread(prune)
        thread.join(timeout=0.5)  # done by now unless it waits for the linker
        pruning.append(thread)
        assert not raised, raised

    with backend.write() as w:
        key = w.records.find("linker").key
        w.graph.conn = _PausedAfterFirst(w.graph.conn, start_pruning)
        w.graph.add_entities(key, ["Shared Name"])
    pruning[0].join(timeout=60)
    with backend.read() as r:
        assert r.graph.entity_names(key) == ["Shared Name"]
