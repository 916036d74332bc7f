"""Peak resident memory of one stretch of a process, on Linux.

``ru_maxrss`` only grows over a process's life, so a workload that builds
several engines in one process cannot tell which of them needed the
memory. Linux can reset the peak (``VmHWM``) by writing ``5`` to
``/proc/self/clear_refs``; :class:`PeakWatch` does that at the start of a
stretch and reads the peak at its end. Where that is not possible (another
OS, a locked-down ``/proc``) the figures are ``None``, never a guess.
"""

from __future__ import annotations

import re
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_RESET_PEAK = "5"
"""What ``clear_refs`` takes to reset the peak resident set size (Linux 4.0+)."""


def _status_mb(field: str) -> float | None:
    """A ``kB`` field of ``/proc/self/status`` in MB, or ``None`` where it is absent."""
    try:
        text = _STATUS.read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return None if found is None else int(found.group(1)) / 1024


class PeakWatch:
    """The resident set at the start of a stretch and its peak during it, in MB.

    Usage::

        watch = PeakWatch()   # resets the peak
        build_something()
        watch.figures()       # rss_before_mb, peak_rss_mb, peak_rss_growth_mb
    """

    def __init__(self) -> None:
        self.reset = _reset_peak()
        self.before_mb = _status_mb("VmRSS")

    def figures(self) -> dict[str, float | None]:
        """The resident set before, the peak since, and their difference (``None`` if unknown).

        The growth is what the stretch itself needed at its worst; the peak
        also counts whatever the process held before it.
        """
        peak = _status_mb("VmHWM") if self.reset else None
        before = self.before_mb
        growth = None if peak is None or before is None else max(0.0, peak - before)
        return {"rss_before_mb": before, "peak_rss_mb": peak, "peak_rss_growth_mb": growth}


def _reset_peak() -> bool:
    """Reset this process's peak resident set size; whether that worked."""
    try:
        _CLEAR_REFS.write_text(_RESET_PEAK)
    except OSError:
        return False
    return True
