"""Close the stores a process leaves open when it exits normally.

A store that is not closed leaves its vector index's latest changes in the
change log only (a periodic save holds at least half the index): the next
process that opens the store replays them before its first recall, which at
a million memories is a graph build of up to half of them.
Scripts and notebooks often never call ``close()``, so at interpreter exit
each store this process opened and left open is closed, which saves its
indexes as ``close()`` does.

A forked child forgets its parent's open stores (they are the parent's, and
their connections are not the child's to use) and closes only those it opens.
A process killed or ended by ``os._exit`` closes nothing; its stores are
as safe as after a crash (the next open replays the log).
"""

from __future__ import annotations

import atexit
import logging
import os
import weakref
from typing import Protocol

logger = logging.getLogger(__name__)


class Closable(Protocol):
    """What is closed at exit: a store."""

    def close(self) -> None:
        """Close, saving what the next open would otherwise redo; a second call does nothing."""


_opened: weakref.WeakSet[Closable] = weakref.WeakSet()
"""The stores this process opened, until collected (closing one already closed does nothing)."""


def track(store: Closable) -> None:
    """Close ``store`` when this process exits, unless it was closed or collected before."""
    _opened.add(store)


def close_left_open() -> None:
    """Close the stores this process opened and left open (the exit hook)."""
    for store in list(_opened):
        try:
            store.close()
        except Exception as e:  # exiting: the next open recovers; say so and go on
            logger.warning("could not close %r at exit: %s", store, e)


atexit.register(close_left_open)
os.register_at_fork(after_in_child=_opened.clear)
