"""Dates named in a query, as time windows: a small English date-expression parser.

About one LoCoMo question in nine names a date ("on 8 May, 2023", "in July
2023", "last week"). Recall can use the windows as one more fused list over
the candidates the content channels found (``temporal`` in
:mod:`embedmind.engine.recall`): the candidates created within a window move up;
nothing outside the candidates is brought in, and a query without a date is
not changed at all.

Forms understood (case-insensitive): ``8 May 2023``, ``8 May, 2023``,
``May 8, 2023``, ``May 8 2023`` (a day, padded by :data:`PAD_DAYS` on each
side); ``May 2023`` (the month, padded); and, only when ``now`` is given,
``yesterday``, ``today``, ``last week``/``weekend``/``month``, ``N days``/
``weeks ago``. Bare years and month names without a year are ignored: the
first spans most of a long-running memory, the second needs a guess.
"""

from __future__ import annotations

import datetime as _dt
import re

PAD_DAYS = 10
"""Days added on each side of a named date: the issue's measured ±10 days."""
MONTHS = {
    name: number
    for number, name in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
_M = "(" + "|".join(MONTHS) + ")"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? {_M},? (\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_M} (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b{_M},? (\d{{4}})\b")
_AGO = re.compile(r"\b(\d{1,3}) (day|week)s? ago\b")
_UTC = _dt.timezone.utc
Window = tuple[_dt.datetime, _dt.datetime]
"""``[start, end)``, timezone-aware."""


def windows(query: str, *, now: _dt.datetime | None = None) -> list[Window]:
    """The time windows of the dates ``query`` names (``[]`` when it names none).

    Args:
        query: The query text.
        now: The instant relative forms are counted from; without it they are ignored.

    Returns:
        ``[start, end)`` windows, each padded by :data:`PAD_DAYS` on both sides.

    Example:
        >>> [w[0].date().isoformat() for w in windows("what did she do on 8 May, 2023?")]
        ['2023-04-28']
        >>> windows("what is her job?")
        []
    """
    text = query.casefold()
    days = [_day(int(y), m, int(d)) for d, m, y in _DAY_MONTH_YEAR.findall(text)]
    days += [_day(int(y), m, int(d)) for m, d, y in _MONTH_DAY_YEAR.findall(text)]
    spans = [(day, _dt.timedelta(days=1)) for day in days if day is not None]
    if not days:  # "May 8, 2023" also reads as "May ... 2023": only without a day
        for month, year in _MONTH_YEAR.findall(text):
            start = _day(int(year), month, 1)
            if start is not None:
                spans.append((start, _dt.timedelta(days=_month_days(start))))
    if now is not None:
        spans += [(day, _dt.timedelta(days=1)) for day in _relative(text, now)]
    return [window for start, length in spans if (window := _padded(start, length))]


def _padded(start: _dt.datetime, length: _dt.timedelta) -> Window | None:
    """``[start - PAD_DAYS, start + length + PAD_DAYS)``, or ``None`` past the calendar's ends."""
    pad = _dt.timedelta(days=PAD_DAYS)
    try:
        return start - pad, start + length + pad
    except OverflowError:  # "in December 9999", "on 1 January 0001": no window fits
        return None


def _month_days(first: _dt.datetime) -> int:
    following = (first.month % 12) + 1
    year = first.year + (first.month == 12)
    return (_dt.date(year, following, 1) - first.date()).days if year <= 9999 else 31


def _day(year: int, month: str, day: int) -> _dt.datetime | None:
    try:
        return _dt.datetime(year, MONTHS[month], day, tzinfo=_UTC)
    except ValueError:  # "31 February", year 0: not a date
        return None


def _relative(text: str, now: _dt.datetime) -> list[_dt.datetime]:
    """Midnights of the days that relative forms point at (their span's middle)."""
    today = now.astimezone(_UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    offsets = {"today": 0, "yesterday": 1, "last weekend": 7, "last week": 7, "last month": 30}
    days = [today - _dt.timedelta(days=d) for phrase, d in offsets.items() if phrase in text]
    for count, unit in _AGO.findall(text):
        days.append(today - _dt.timedelta(days=int(count) * (7 if unit == "week" else 1)))
    return days
