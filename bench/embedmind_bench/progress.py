"""Progress bars for long benchmark phases: tqdm on a terminal, nothing in tests.

Example:
    >>> bar = silent("build", 10)
    >>> bar.update(10); bar.close()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tqdm.auto import tqdm


class Progress(Protocol):
    """A progress bar: ``tqdm`` fits, and so does a no-op."""

    def update(self, n: int = 1) -> object:
        """Advance by ``n`` units."""

    def close(self) -> None:
        """Finish the bar."""


ProgressFactory = Callable[[str, int], Progress]


class _Silent:
    """A progress bar that shows nothing."""

    def update(self, n: int = 1) -> object:
        return None

    def close(self) -> None:
        return None


def silent(desc: str, total: int) -> Progress:
    """Return a progress bar that shows nothing (the default of every workload).

    Args:
        desc: Ignored.
        total: Ignored.

    Returns:
        A no-op bar.
    """
    del desc, total
    return _Silent()


def bars(*, hidden: bool = False) -> ProgressFactory:
    """Return a factory of transient tqdm bars (``tqdm.auto``: widgets in notebooks).

    Args:
        hidden: Make every bar a no-op.

    Returns:
        A ``(desc, total) -> bar`` function.
    """

    def make(desc: str, total: int) -> Progress:
        bar: Progress = tqdm(total=total, desc=desc, disable=hidden, leave=False)
        return bar

    return make
