"""Plain-Python reference implementations the engine is checked against.

Written from the specification, not from the engine's code:

- :func:`where_matches`, :func:`where_type_error` and :func:`where_is_valid`
  evaluate the ``where`` language over one metadata dict.
- :class:`BM25Oracle` is a textbook Lucene-style BM25 over a dict of live
  documents (only the analyser is shared with the engine); with date words,
  a document is its text followed by its ``created_at`` date as "7 May 2023".
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from embedmind.lexical.analyzer import analyze

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
LIST_OPERATORS = ("$contains", "$any", "$all")
OPERATORS = frozenset(("$eq", "$ne", "$in", "$nin", "$exists", *COMPARISONS, *LIST_OPERATORS))
LOGICAL = ("$and", "$or", "$not")

_MISSING = object()


# -- where: JSON kinds and equality ----------------------------------------------


def is_number(value: object) -> bool:
    """Int or float, but not bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(stored: object, arg: object) -> bool:
    """JSON equality of a stored value with a scalar filter argument."""
    if arg is None:
        return stored is None
    if isinstance(arg, bool):
        return isinstance(stored, bool) and stored is arg
    if is_number(arg):
        return is_number(stored) and stored == arg
    if isinstance(arg, str):
        return isinstance(stored, str) and stored == arg
    raise AssertionError(f"not a scalar filter argument: {arg!r}")


# -- where: validity ----------------------------------------------------------------


def _valid_scalar(value: object) -> bool:
    if value is None or isinstance(value, bool | str):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    if isinstance(value, float):
        return math.isfinite(value)
    return False


def _valid_list(value: object) -> bool:
    return isinstance(value, list | tuple) and all(_valid_scalar(v) for v in value)


def _valid_leaf(op: object, arg: object) -> bool:
    if op not in OPERATORS:
        return False
    if op == "$exists":
        return isinstance(arg, bool)
    if op in ("$eq", "$ne", "$contains"):
        return _valid_scalar(arg)
    if op in ("$in", "$nin", "$any", "$all"):
        return _valid_list(arg)
    # comparisons: a number (not bool) or a string
    if isinstance(arg, bool) or not isinstance(arg, int | float | str):
        return False
    return _valid_scalar(arg)


def where_is_valid(where: object) -> bool:
    """Whether ``where`` is a well-formed filter (else the engine must raise InvalidFilterError)."""
    if not isinstance(where, Mapping):
        return False
    for key, value in where.items():
        if not isinstance(key, str):
            return False
        if key in ("$and", "$or"):
            if not isinstance(value, list | tuple) or not value:
                return False
            if not all(where_is_valid(item) for item in value):
                return False
        elif key == "$not":
            if not where_is_valid(value):
                return False
        elif key.startswith("$"):
            return False
        elif isinstance(value, Mapping):
            if not value:
                return False  # a dict as an equality value
            if not all(_valid_leaf(op, arg) for op, arg in value.items()):
                return False
        elif isinstance(value, list | tuple) or not _valid_scalar(value):
            return False
    return True


# -- where: evaluation ------------------------------------------------------------------


def _leaf(stored: object, op: str, arg: Any) -> bool:
    present = stored is not _MISSING
    if op == "$exists":
        return present is arg
    if op == "$eq":
        return present and json_equal(stored, arg)
    if op == "$ne":
        return not (present and json_equal(stored, arg))
    if op == "$in":
        return present and any(json_equal(stored, v) for v in arg)
    if op == "$nin":
        return not (present and any(json_equal(stored, v) for v in arg))
    if op in COMPARISONS:
        if not present:
            return False
        if isinstance(arg, str):
            if not isinstance(stored, str):
                return False
        elif not is_number(stored):
            return False
        if op == "$gt":
            return stored > arg  # type: ignore[operator]
        if op == "$gte":
            return stored >= arg  # type: ignore[operator]
        if op == "$lt":
            return stored < arg  # type: ignore[operator]
        return stored <= arg  # type: ignore[operator]
    if not present or not isinstance(stored, list):
        return False
    if op == "$contains":
        return any(json_equal(e, arg) for e in stored)
    if op == "$any":
        return any(any(json_equal(e, v) for e in stored) for v in arg)
    if op == "$all":
        return all(any(json_equal(e, v) for e in stored) for v in arg)
    raise AssertionError(op)


def where_matches(where: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` satisfies the (valid) filter ``where``."""
    for key, value in where.items():
        if key == "$and":
            ok = all(where_matches(f, metadata) for f in value)
        elif key == "$or":
            ok = any(where_matches(f, metadata) for f in value)
        elif key == "$not":
            ok = not where_matches(value, metadata)
        else:
            stored = metadata.get(key, _MISSING)
            if isinstance(value, Mapping):
                ok = all(_leaf(stored, op, arg) for op, arg in value.items())
            else:
                ok = _leaf(stored, "$eq", value)
        if not ok:
            return False
    return True


def _incomparable(stored: object, op: str, arg: Any) -> bool:
    if stored is _MISSING:
        return False
    if op in COMPARISONS:
        return not isinstance(stored, str) if isinstance(arg, str) else not is_number(stored)
    if op in LIST_OPERATORS:
        return not isinstance(stored, list)
    return False


def where_type_error(where: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    """Whether any type-sensitive leaf anywhere in ``where`` meets an incomparable stored value."""
    for key, value in where.items():
        if key in ("$and", "$or"):
            if any(where_type_error(f, metadata) for f in value):
                return True
        elif key == "$not":
            if where_type_error(value, metadata):
                return True
        elif isinstance(value, Mapping):
            stored = metadata.get(key, _MISSING)
            if any(_incomparable(stored, op, arg) for op, arg in value.items()):
                return True
    return False


def where_listing(
    where: Mapping[str, Any], memories: Mapping[str, Mapping[str, Any]]
) -> set[str] | None:
    """Ids of ``memories`` (id -> metadata) matching ``where``; ``None`` means FilterTypeError."""
    if any(where_type_error(where, md) for md in memories.values()):
        return None
    return {mid for mid, md in memories.items() if where_matches(where, md)}


# -- BM25 -----------------------------------------------------------------------------------

K1 = 1.2
B = 0.75


class BM25Oracle:
    """Textbook BM25 over the live documents (id -> content).

    With ``dates``, each document is indexed as its content followed by its
    ``created_at`` date in UTC written "7 May 2023" (the store's date words).
    """

    def __init__(self, *, dates: bool = False) -> None:
        self.docs: dict[str, str] = {}
        self.created: dict[str, dt.datetime] = {}
        self.dates = dates
        self._analysed: dict[str, Counter[str]] = {}  # text -> term counts (memo)

    def put(self, doc_id: str, content: str, created_at: dt.datetime | None = None) -> None:
        """Insert or replace a document (``created_at`` is needed with ``dates``)."""
        if self.dates and created_at is None:
            raise ValueError("an oracle with dates needs each document's created_at")
        self.docs[doc_id] = content
        if created_at is not None:
            self.created[doc_id] = created_at

    def drop(self, doc_id: str) -> None:
        """Remove a document (forget or delete)."""
        self.docs.pop(doc_id, None)
        self.created.pop(doc_id, None)

    def text(self, doc_id: str) -> str:
        """What is indexed of a document: its content, then its date in words with ``dates``."""
        if not self.dates:
            return self.docs[doc_id]
        day = self.created[doc_id].astimezone(dt.timezone.utc)
        months = ["January", "February", "March", "April", "May", "June", "July", "August",
                  "September", "October", "November", "December"]  # fmt: skip
        return f"{self.docs[doc_id]} {day.day} {months[day.month - 1]} {day.year}"

    def _indexed(self) -> dict[str, Counter[str]]:
        analysed = {}
        for d in self.docs:
            text = self.text(d)
            counts = self._analysed.get(text)
            if counts is None:
                counts = self._analysed[text] = Counter(analyze(text))
            if counts:
                analysed[d] = counts
        return analysed

    def vocabulary(self) -> set[str]:
        """Distinct terms over the live documents."""
        return {t for counts in self._indexed().values() for t in counts}

    def indexed_count(self) -> int:
        """Documents with at least one term."""
        return len(self._indexed())

    def scores(self, query: str, among: Iterable[str] | None = None) -> dict[str, float]:
        """BM25 score of every indexed document with a positive score for ``query``."""
        indexed = self._indexed()
        n = len(indexed)
        if n == 0:
            return {}
        lengths = {d: sum(c.values()) for d, c in indexed.items()}
        avgdl = sum(lengths.values()) / n
        terms = set(analyze(query))
        df = {t: sum(1 for c in indexed.values() if t in c) for t in terms}
        wanted = set(indexed) if among is None else set(among) & set(indexed)
        result: dict[str, float] = {}
        for d in wanted:
            counts = indexed[d]
            score = 0.0
            for t in terms:
                tf = counts.get(t, 0)
                if tf == 0:
                    continue
                idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                norm = K1 * (1.0 - B + B * lengths[d] / avgdl)
                score += idf * tf * (K1 + 1.0) / (tf + norm)
            if score > 0:
                result[d] = score
        return result
