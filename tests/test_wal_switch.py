"""A new file's switch to WAL is retried while another process switches it (``SQLITE_BUSY``)."""

from __future__ import annotations

import apsw
import pytest

from embedmind.backend.sqlite import connection


class _Busy:
    """A connection whose first ``busy`` executes raise ``BusyError``, as a racing open saw."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.calls = 0

    def execute(self, sql: str) -> None:
        assert sql == "PRAGMA journal_mode = WAL"
        self.calls += 1
        if self.calls <= self.busy:
            raise apsw.BusyError("database is locked")


def test_the_switch_is_retried_until_it_succeeds() -> None:
    conn = _Busy(busy=3)
    connection._into_wal(conn, busy_ms=1_000)  # type: ignore[arg-type]
    assert conn.calls == 4


def test_the_switch_gives_up_after_the_busy_timeout() -> None:
    conn = _Busy(busy=10**9)
    with pytest.raises(apsw.BusyError):
        connection._into_wal(conn, busy_ms=50)  # type: ignore[arg-type]
    assert 2 <= conn.calls < 10**9
