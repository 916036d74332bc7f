"""LangGraph's ``TTLConfig`` over embedmind TTLs: expiry, refresh on read, the sweeper.

LangGraph counts TTLs in minutes; the engine stores an absolute expiry, hides
expired memories from every read, and deletes them in ``sweep_expired``.
Refreshing on read slides an item's expiry to ``now + its ttl`` (the engine's
``reinforce(extend_ttl=...)``, which never shortens one). The sweeper is a
daemon thread calling ``sweep_expired`` every ``sweep_interval_minutes``, as
LangGraph's SQLite and Postgres stores run theirs: started by
``start_ttl_sweeper`` and stopped by ``stop_ttl_sweeper``.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import logging
import math
import threading
from collections import defaultdict
from collections.abc import Iterable

from langgraph.store.base import TTLConfig

from embedmind import EmbedmindError, Memory, Store, StoreClosedError

logger = logging.getLogger(__name__)
DEFAULT_SWEEP_MINUTES = 5  # LangGraph's stores sweep every 5 minutes unless told
SWEEP_BATCH = 1_000
TTL_KEY = "ttl"


def check_ttl_config(ttl: TTLConfig | None) -> TTLConfig | None:
    """Validate ``ttl`` (LangGraph's keys, minutes as positive finite numbers).

    Raises:
        ValueError: When a key is unknown or a number is not positive.
    """
    if ttl is None:
        return None
    known = set(TTLConfig.__annotations__)
    unknown = set(ttl) - known
    if unknown:
        raise ValueError(
            f"unknown TTL config keys {sorted(unknown)}; expected some of {sorted(known)}"
        )
    for name in ("default_ttl", "sweep_interval_minutes"):
        value = ttl.get(name)
        if value is not None:
            _minutes(value, name)
    return TTLConfig(**ttl)


def _minutes(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} is a number of minutes, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive minutes, got {value!r}")
    return float(value)


def as_timedelta(minutes: float | None) -> dt.timedelta | None:
    """A put's ``ttl`` (minutes) as the engine's ``ttl``."""
    return None if minutes is None else dt.timedelta(minutes=_minutes(minutes, "ttl"))


def refresh(store: Store, memories: Iterable[Memory], reserved: str) -> None:
    """Slide the expiry of ``memories`` that have a TTL to ``now + ttl`` (one write per ttl)."""
    by_ttl: dict[float, list[str]] = defaultdict(list)
    for memory in memories:
        minutes = memory.metadata.get(reserved, {}).get(TTL_KEY)
        if minutes is not None and memory.expires_at is not None:
            by_ttl[float(minutes)].append(memory.id)
    for minutes, ids in by_ttl.items():
        store.reinforce(ids, extend_ttl=dt.timedelta(minutes=minutes))


class Sweeper:
    """A background thread deleting expired memories every ``interval`` minutes."""

    def __init__(self, store: Store) -> None:
        """Prepare a sweeper for ``store`` (not started)."""
        self._store = store
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._future: cf.Future[None] | None = None

    def sweep(self) -> int:
        """Delete every expired memory now; return how many."""
        total = 0
        while True:
            swept = self._store.sweep_expired(limit=SWEEP_BATCH)
            total += swept
            if swept < SWEEP_BATCH:
                return total

    def start(self, minutes: float) -> cf.Future[None]:
        """Start sweeping every ``minutes`` (a running sweeper is returned as it is)."""
        if self._future is not None and not self._future.done():
            return self._future
        interval = _minutes(minutes, "sweep_interval_minutes") * 60
        self._stop.clear()
        future: cf.Future[None] = cf.Future()
        self._future = future
        self._thread = threading.Thread(
            target=self._run, args=(interval, future), name="embedmind-ttl-sweeper", daemon=True
        )
        self._thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; whether it stopped within ``timeout`` seconds."""
        thread = self._thread
        if thread is None:
            return True
        self._stop.set()
        thread.join(timeout)
        stopped = not thread.is_alive()
        if stopped:
            self._thread = None
        return stopped

    def _run(self, interval: float, future: cf.Future[None]) -> None:
        try:
            while not self._stop.wait(interval):
                try:
                    swept = self.sweep()
                except StoreClosedError:
                    return  # the store closed under the sweeper: nothing left to sweep
                except EmbedmindError as e:  # busy: try again next round
                    logger.warning("TTL sweep of %s failed: %s", self._store.path, e)
                    continue
                if swept:
                    logger.info("TTL sweep deleted %d expired items", swept)
        finally:
            future.set_result(None)
