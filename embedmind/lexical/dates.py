"""Date words: a memory's ``created_at`` date as index terms a question would use.

A question about a conversation names its date the way people write one ("what
did Caroline do on 7 May 2023?", "in May 2023"), while a memory's text rarely
repeats the date it was said on. So, when the store's switch is on, both
backends index a memory's own terms plus the analysed words of its
``created_at`` date in UTC: the day number, the English month name and the
year (``7 May 2023`` gives ``7``, ``may``, ``2023``). They are ordinary own
terms: they count in the document's length, and a memory lends them to its
dialog neighbours with the rest of its own terms (session context), exactly as
if the date were written at the end of its text; they are matched against no
alias key (they are not words the memory says). Content, snippets and vectors
are unchanged: only the postings carry them.

Measured on the LoCoMo development split, leave one conversation out
(``docs/benchmarks.md``): text recall@10 +0.020 ± 0.006, every fold at or
above zero, temporal questions +0.016 to +0.037; month and year alone gave
+0.015, and the weekday added nothing.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from functools import lru_cache

from embedmind.lexical.aliases import Fields
from embedmind.lexical.analyzer import analyze

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_DAY_MICROS = 86_400 * 1_000_000
_EPOCH = _dt.date(1970, 1, 1)

__all__ = ["MONTHS", "date_terms", "dated"]


def date_terms(created_at: int) -> tuple[str, ...]:
    """The analysed date words of an instant (microseconds since the epoch, UTC).

    Examples:
        >>> date_terms(1_683_417_600_000_000)  # 2023-05-07T00:00:00Z
        ('7', 'may', '2023')
    """
    return _day_terms(created_at // _DAY_MICROS)


@lru_cache(maxsize=4096)
def _day_terms(day: int) -> tuple[str, ...]:
    # Memories of one conversation share a few days: a bulk write analyses each once.
    date = _EPOCH + _dt.timedelta(days=day)
    return tuple(analyze(f"{date.day} {MONTHS[date.month - 1]} {date.year}"))


def dated(fields: Fields, created_at: int | None) -> Fields:
    """``fields`` with the date words of ``created_at`` among its own terms (``None``: as is)."""
    if created_at is None:
        return fields
    own = Counter(fields.own)
    own.update(date_terms(created_at))
    return Fields(own, fields.alias)
