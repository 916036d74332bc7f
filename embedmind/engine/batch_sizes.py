"""How many memories each transaction of a ``remember_many`` call writes.

A transaction holds the writer lock from its first row to its commit, so
every other writer (another thread, another process) waits for the batch in
progress. Small batches keep that wait short but are slow: a batch rewrites
the last posting block of every term it touches, about 1,300 terms for 256
chat messages, so a 100k text-only load took 46.5-47.3 s in batches of 256
against 13.1 s in batches of 10,000 (``docs/benchmarks.md``, stop 42).

With no ``batch_size`` given, batches are sized by the time they hold the
lock instead: the first is :data:`FIRST` memories, and each next one is the
last one scaled by how far its hold fell short of (or went past)
:data:`TARGET_HOLD_S`, by at most :data:`MAX_STEP` either way, between
:data:`FIRST` and :data:`LARGEST`. A batch's cost grows more slowly than
its size (the same terms recur), so growing by the ratio does not overshoot
the target on the same store; a slower machine, a busier disk or a larger
store get smaller batches. The bounded step keeps one slow commit (the
commit after which the WAL passes 16 MiB also checkpoints it, under the
lock) from undoing the growth.

Never below :data:`FIRST`, the fixed size this replaces: a batch also pays a
fixed cost (its commit, the last blocks of its terms), so shrinking a batch
whose hold is mostly that cost would shorten the hold little and make every
memory dearer, batch after batch. So a load pays at most the cost per
memory of batches of 256, and another writer waits about the larger of the
target and one batch of 256.
"""

from __future__ import annotations

FIRST = 256
"""The first batch of an adaptive load, and the smallest."""
LARGEST = 10_000
"""The largest batch, fixed or adaptive."""
TARGET_HOLD_S = 0.25
"""The writer-lock hold each adaptive batch aims for (seconds): half of 500 ms, the p99
wait ``embedmind bench ingest`` holds another writer to, which also covers its own write."""
MAX_STEP = 2.0
"""The most a batch grows over, or shrinks under, the one measured before it."""


class BatchSizes:
    """The size of each next batch: fixed, or adapted to the lock holds measured so far.

    Args:
        fixed: Memories per batch (at most :data:`LARGEST`), or ``None`` to adapt.

    Example:
        >>> sizes = BatchSizes(None)
        >>> sizes.next()
        256
        >>> sizes.observe(256, held_s=0.02)  # far under the target: doubles
        >>> sizes.next()
        512
        >>> sizes.observe(512, held_s=0.4)  # over the target: in proportion
        >>> sizes.next()
        320
        >>> sizes.observe(1_000, held_s=5.0)  # a checkpoint ran: halves, no more
        >>> sizes.next()
        500
        >>> sizes.observe(500, held_s=5.0)  # never below the first size
        >>> sizes.next()
        256
    """

    def __init__(self, fixed: int | None) -> None:
        self._fixed = fixed
        self._size = FIRST if fixed is None else fixed

    def next(self) -> int:
        """The size of the next batch."""
        return self._size

    def observe(self, size: int, held_s: float) -> None:
        """Take a written batch's size and how long its transaction held the writer lock."""
        if self._fixed is not None:
            return
        scale = MAX_STEP if held_s <= 0 else TARGET_HOLD_S / held_s
        scale = min(MAX_STEP, max(1 / MAX_STEP, scale))
        self._size = max(FIRST, min(LARGEST, int(size * scale)))
