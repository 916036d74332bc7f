"""The few numbers every benchmark reports: percentiles, recall@k, hit@k, growth.

Pure functions over plain lists, so each can be checked against a hand
oracle (``tests/benchmarks/test_bench_units.py``).

Example:
    >>> recall_at_k(["a", "x", "b"], {"a", "b"}, 2), hit_at_k(["x", "a"], {"a"}, 1)
    (0.5, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np


def percentile_ms(seconds: Sequence[float], q: float) -> float | None:
    """Return the ``q``-th percentile of timings given in seconds, in milliseconds.

    Linear interpolation between samples, as ``numpy.percentile`` does by default.

    Args:
        seconds: One timing per query.
        q: The percentile, 0-100.

    Returns:
        Milliseconds, or ``None`` without samples.
    """
    if len(seconds) == 0:
        return None
    return float(np.percentile(np.asarray(seconds, dtype=np.float64), q)) * 1e3


def latency(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """Summarise timings: ``p50_ms``, ``p95_ms``, ``mean_ms`` and the sample count.

    Args:
        seconds: One timing per query.

    Returns:
        A JSON-ready dictionary.
    """
    mean = float(np.mean(seconds)) * 1e3 if len(seconds) else None
    return {
        "p50_ms": percentile_ms(seconds, 50),
        "p95_ms": percentile_ms(seconds, 95),
        "mean_ms": mean,
        "samples": len(seconds),
    }


def recall_at_k(found: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Return the share of ``relevant`` items among the first ``k`` of ``found``.

    Args:
        found: Ranked results, best first.
        relevant: The items that count (non-empty).
        k: The cut-off.

    Returns:
        ``|relevant ∩ found[:k]| / |relevant|``.

    Raises:
        ValueError: When ``relevant`` is empty or ``k`` is below 1.
    """
    if not relevant or k < 1:
        raise ValueError("recall@k needs k >= 1 and at least one relevant item")
    return len(set(found[:k]) & set(relevant)) / len(relevant)


def hit_at_k(found: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Return 1.0 when at least one ``relevant`` item is among the first ``k``, else 0.0.

    Args:
        found: Ranked results, best first.
        relevant: The items that count.
        k: The cut-off.

    Returns:
        1.0 or 0.0, so a mean over questions is the hit rate.
    """
    return 1.0 if set(found[:k]) & set(relevant) else 0.0


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """Return ``numerator / denominator``, or ``None`` when either is missing or zero.

    Args:
        numerator: A figure, or ``None`` when it was not measured.
        denominator: Another figure of the same unit.

    Returns:
        The ratio, or ``None``.
    """
    if numerator is None or denominator is None or denominator == 0:
        return None
    if math.isnan(numerator) or math.isnan(denominator):
        return None
    return numerator / denominator


def growth(
    small: tuple[int, float | None], large: tuple[int, float | None]
) -> dict[str, float | None]:
    """Describe how a cost grows from one corpus size to a larger one.

    The exponent ``log(cost ratio) / log(size ratio)`` reads as a complexity:
    about 0 for a constant cost, 0.5 for square-root growth, 1 for linear.

    Args:
        small: ``(size, cost)`` at the smaller size.
        large: ``(size, cost)`` at the larger size.

    Returns:
        ``{"ratio": cost ratio, "size_ratio": ..., "exponent": ...}``; figures
        that cannot be computed are ``None``.
    """
    cost_ratio = ratio(large[1], small[1])
    size_ratio = large[0] / small[0]
    exponent = None
    if cost_ratio is not None and cost_ratio > 0 and size_ratio != 1:
        exponent = math.log(cost_ratio) / math.log(size_ratio)
    return {"ratio": cost_ratio, "size_ratio": size_ratio, "exponent": exponent}


def mean_and_error(values: Sequence[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error (0 for one value, NaN for none).

    Example:
        >>> [round(x, 4) for x in mean_and_error([1.0, 0.0, 1.0, 0.0])]
        [0.5, 0.2887]
    """
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)
