"""The files an engine keeps under its folder: their size on disk, and reading them once."""

from __future__ import annotations

from pathlib import Path


def files(root: Path) -> list[Path]:
    """The files under ``root``, in name order (none when it does not exist)."""
    return sorted(p for p in root.rglob("*") if p.is_file())


def disk_bytes(root: Path) -> int:
    """Total size of the files under ``root``."""
    return sum(p.stat().st_size for p in files(root))


def read_files(root: Path) -> int:
    """Read every file under ``root`` once, through the OS page cache; return the bytes read.

    A workload that builds its engines in turn reads each one's files before
    the first timed query: the first built would otherwise answer from pages
    the OS dropped while the others were built (a VM's DAMON scheme pages out
    file pages left alone for a minute), and the last from a warm cache.
    """
    total, buffer = 0, bytearray(1 << 24)
    for path in files(root):
        with path.open("rb") as file:
            while read := file.readinto(buffer):
                total += read
    return total
