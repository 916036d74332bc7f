"""Time at the API boundary: timezone-aware UTC datetimes outside, integer microseconds inside."""

from __future__ import annotations

import datetime as _dt
import time

from embedmind.errors import InvalidInputError

UTC = _dt.timezone.utc
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)
MIN_MICROS = -62_135_596_800_000_000
"""0001-01-01T00:00:00Z, the earliest instant a datetime can hold in UTC."""
MAX_MICROS = 253_402_300_799_999_999
"""9999-12-31T23:59:59.999999Z, the latest instant a datetime can hold in UTC."""


def now_micros() -> int:
    """Return the wall clock as integer microseconds since the Unix epoch (UTC)."""
    return time.time_ns() // 1_000


def to_micros(value: _dt.datetime, field: str) -> int:
    """Convert a timezone-aware datetime to microseconds since the epoch.

    Args:
        value: The instant; must carry a timezone.
        field: The argument name, for the error message.

    Returns:
        Microseconds since 1970-01-01T00:00:00Z.

    Raises:
        InvalidInputError: When ``value`` is not a datetime, is naive, or lies
            outside the years 1-9999 once converted to UTC.
    """
    if not isinstance(value, _dt.datetime):
        raise InvalidInputError(field, f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            field, "naive datetime; pass a timezone-aware one, e.g. datetime.now(timezone.utc)"
        )
    delta = value - _EPOCH
    return in_range((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds, field)


def optional_to_micros(value: _dt.datetime | None, field: str) -> int | None:
    """Like :func:`to_micros`, passing ``None`` through."""
    return None if value is None else to_micros(value, field)


def in_range(micros: int, field: str) -> int:
    """Return ``micros`` when a datetime can hold it in UTC.

    ``datetime.max`` with a negative offset, or ``now + ttl`` with a huge ``ttl``,
    lies past year 9999 in UTC: stored, it could never be read back (and SQLite
    takes at most 64-bit integers), so it is refused before anything is written.

    Raises:
        InvalidInputError: When the instant lies outside the years 1-9999 (UTC).
    """
    if not MIN_MICROS <= micros <= MAX_MICROS:
        raise InvalidInputError(field, "lies outside the years 1-9999 in UTC")
    return micros


def from_micros(micros: int) -> _dt.datetime:
    """Convert stored microseconds back to a timezone-aware UTC datetime."""
    return _EPOCH + _dt.timedelta(microseconds=micros)


def optional_from_micros(micros: int | None) -> _dt.datetime | None:
    """Like :func:`from_micros`, passing ``None`` through."""
    return None if micros is None else from_micros(micros)


def resolve_now(now: _dt.datetime | None) -> int:
    """Return ``now`` in microseconds, or the wall clock when it is ``None``."""
    return now_micros() if now is None else to_micros(now, "now")


def duration_micros(value: _dt.timedelta, field: str) -> int:
    """Convert a positive timedelta to microseconds.

    Raises:
        InvalidInputError: When ``value`` is not a positive timedelta.
    """
    if not isinstance(value, _dt.timedelta):
        raise InvalidInputError(field, f"expected a timedelta, got {type(value).__name__}")
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if micros <= 0:
        raise InvalidInputError(field, "must be a positive duration")
    return micros
