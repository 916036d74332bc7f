"""Corpus sizes as people write them: ``10k``, ``100k``, ``1M`` or ``10000``.

Example:
    >>> parse_size("100k"), parse_sizes("10k,1M"), size_label(1_000_000)
    (100000, [10000, 1000000], '1M')
"""

from __future__ import annotations

_FACTORS = {"k": 1_000, "m": 1_000_000}


def parse_size(text: str) -> int:
    """Parse one size: ``"10k"``, ``"1M"``, ``"1.5k"``, ``"10_000"`` or ``"10000"``.

    Args:
        text: The size as typed on a command line (case-insensitive).

    Returns:
        The document count, at least 1.

    Raises:
        ValueError: When ``text`` is not a positive whole count.
    """
    cleaned = text.strip().lower().replace("_", "").replace(",", "")
    factor = _FACTORS.get(cleaned[-1:], 1)
    number = cleaned[:-1] if factor > 1 else cleaned
    try:
        value = float(number) * factor
    except ValueError:
        raise ValueError(f"not a size: {text!r} (try 10k, 100k, 1M or 10000)") from None
    if value < 1 or value != int(value):
        raise ValueError(f"not a positive whole size: {text!r}")
    return int(value)


def parse_sizes(text: str) -> list[int]:
    """Parse a comma-separated list of sizes, keeping the order given.

    Args:
        text: For example ``"10k,100k,1M"``.

    Returns:
        The sizes; duplicates are dropped.

    Raises:
        ValueError: When an item is not a size or the list is empty.
    """
    sizes = list(dict.fromkeys(parse_size(part) for part in text.split(",") if part.strip()))
    if not sizes:
        raise ValueError("no sizes given")
    return sizes


def size_label(size: int) -> str:
    """Return ``"1M"`` for 1,000,000, ``"100k"`` for 100,000, else the number.

    Args:
        size: A document count.

    Returns:
        The short label used in tables and file names.
    """
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"{size // 1_000_000}M"
    if size >= 1_000 and size % 1_000 == 0:
        return f"{size // 1_000}k"
    return str(size)
