"""The ``where`` language as a value: parsed and validated once, compiled by each backend.

A filter is a JSON object over a memory's top-level metadata keys::

    {"topic": "drinks"}                                  # equality shorthand
    {"year": {"$gte": 2020, "$lt": 2025}}                # several operators: AND
    {"$or": [{"a": 1}, {"$not": {"tags": {"$contains": "x"}}}]}

Operators: ``$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $all $any``,
the string operators ``$match`` (substring) and ``$imatch`` (substring after
:func:`fold` of both sides), and ``$empty`` (absent, null, ``""`` or ``[]``), combined with
``$and``, ``$or`` and ``$not`` to any depth (up to :data:`MAX_DEPTH`). The full
semantics live in ``docs/reference/where.md``; in short, an absent key is a
non-match except for ``$ne``, ``$nin`` and ``$exists: false``, which it
satisfies (as in MongoDB and LlamaIndex), and a present value whose type an
operator cannot compare (``{"$gt": 3}`` against a string, ``$contains``
against a non-list) raises :class:`~embedmind.errors.FilterTypeError` when the
query runs — a property of the stored rows, so the backend raises it.

:func:`parse_where` turns the caller's mapping into a tree of frozen
:class:`All`, :class:`AnyOf`, :class:`Not` and :class:`Test` nodes; every
malformed filter is refused here with :class:`~embedmind.errors.InvalidFilterError`,
so a backend's compiler only translates (the SQLite one:
:mod:`embedmind.backend.sqlite.where_sql`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from embedmind.checks import has_surrogates, is_number
from embedmind.errors import FilterTypeError, InvalidFilterError

MAX_DEPTH = 32
MAX_ALL_VALUES = 1_000
MAX_CONDITIONS = 2_000
"""Most conditions one filter may hold: each key test is one, each ``$all``
value one more, and each comparison or list operator one more (its type check);
a ``$in`` list is one whatever its length. In SQLite each condition is a
correlated subquery and statement preparation grows with their square (about
0.5 s at 2,000, 2.5 s at 4,000); 2,000 conditions bind at most 6,000 of its
32,766 values. The bound is part of the language, so every backend refuses the
same filters."""
MAX_BRANCHES = MAX_CONDITIONS
"""Most filters a ``$and`` or ``$or`` may list (each is at least one condition
unless it is empty, so a longer list is refused before it is parsed)."""
_INT64 = (-(2**63), 2**63 - 1)
COMPARISONS = frozenset({"$gt", "$gte", "$lt", "$lte"})
LIST_OPERATORS = frozenset({"$contains", "$all", "$any"})
TEXT_OPERATORS = frozenset({"$match", "$imatch"})
OPERATORS = frozenset(
    {"$eq", "$ne", "$in", "$nin", "$exists", "$empty"}
    | COMPARISONS
    | LIST_OPERATORS
    | TEXT_OPERATORS
)

Scalar = str | int | float | bool | None
"""A JSON scalar a test compares with."""


@dataclass(frozen=True)
class Test:
    """One operator applied to one top-level metadata key.

    Attributes:
        key: The metadata key (non-empty, no NUL, no unpaired surrogate).
        op: One of :data:`OPERATORS`.
        value: The operand: a scalar (``$eq``, ``$ne``, comparisons, text
            operators, ``$contains``), a bool (``$exists``, ``$empty``) or a
            tuple of scalars (``$in``, ``$nin``, ``$all``, ``$any``).
    """

    key: str
    op: str
    value: Scalar | tuple[Scalar, ...]


@dataclass(frozen=True)
class All:
    """Every clause holds (``$and``, or several keys of one object); empty: always true."""

    clauses: tuple[Clause, ...]


@dataclass(frozen=True)
class AnyOf:
    """At least one clause holds (``$or``)."""

    clauses: tuple[Clause, ...]


@dataclass(frozen=True)
class Not:
    """The clause does not hold (``$not``)."""

    clause: Clause


Clause = Test | All | AnyOf | Not
"""A node of a parsed filter."""


def parse_where(where: Mapping[str, Any] | None) -> Clause | None:
    """Parse and validate a ``where`` filter.

    Args:
        where: The filter, or ``None`` for none.

    Returns:
        The filter's tree, or ``None`` when there is nothing to filter (``None``,
        ``{}``, or only empty ``$and`` objects).

    Raises:
        InvalidFilterError: When the filter is malformed.
    """
    if where is None:
        return None
    parsed = _Parser().node(where, depth=0)
    return None if _always(parsed) else parsed


def _always(clause: Clause) -> bool:
    """Whether a clause is trivially true: an empty conjunction (``{}``, ``{"$and": [{}]}``)."""
    return isinstance(clause, All) and not clause.clauses


def fold(text: str) -> str:
    """The case folding ``$imatch`` compares under: Python's :meth:`str.casefold`.

    Unicode full case folding (``CaseFolding.txt``, statuses C and F, without
    the Turkic T mappings): ``"ß"`` folds to ``"ss"``, ``"ﬁ"`` to ``"fi"``, every
    sigma (``"Σ"``, ``"σ"``, final ``"ς"``) to ``"σ"``, ``"İ"`` to ``"i̇"`` (``i``
    and a combining dot, so ``"istanbul"`` is not in ``"İstanbul"``), and
    Cherokee small letters to capitals. No normalisation: a precomposed ``"é"``
    does not match ``"e"`` and a combining accent. Each backend computes
    this fold (``docs/reference/where.md``: where their Unicode versions part).
    """
    return text.casefold()


def type_error(key: object, operator: object) -> FilterTypeError:
    """The error a backend raises when a stored value cannot be compared by ``operator``."""
    wanted = "a list" if operator in LIST_OPERATORS else "a value of the operand's type"
    return FilterTypeError(
        str(key), str(operator), f"a memory in scope stores a value that is not {wanted}"
    )


def condition_cost(test: Test) -> int:
    """How many conditions a test counts against :data:`MAX_CONDITIONS`."""
    op, value = test.op, test.value
    if op in COMPARISONS:
        return 2  # the test and its type check
    if op == "$empty":
        return 2  # absent, or present and empty
    if op in LIST_OPERATORS:
        values = value if isinstance(value, tuple) else (value,)
        if op == "$all":
            return 2 + len(values)
        return 3 if values else 1
    return 1


class _Parser:
    """Builds the tree in the caller's key order, counting conditions as it goes."""

    def __init__(self) -> None:
        self.conditions = 0

    def spend(self, count: int) -> None:
        """Count ``count`` more conditions; refuse past :data:`MAX_CONDITIONS`."""
        self.conditions += count
        if self.conditions > MAX_CONDITIONS:
            raise InvalidFilterError(
                "where",
                f"compiles to more than {MAX_CONDITIONS} conditions (each key test, $all value "
                "and type check of a comparison or list operator is one); put many values of "
                "one key in one $in (or $nin, $any) list, which is one condition, or split "
                "the query",
            )

    def node(self, where: object, depth: int) -> Clause:
        if not isinstance(where, Mapping):
            raise InvalidFilterError("where", f"expected an object, got {type(where).__name__}")
        if depth > MAX_DEPTH:
            raise InvalidFilterError("where", f"nested deeper than {MAX_DEPTH} levels")
        return _all([self.clause(key, value, depth) for key, value in where.items()])

    def clause(self, key: object, value: object, depth: int) -> Clause:
        if not isinstance(key, str):
            raise InvalidFilterError("where", f"keys must be str, got {type(key).__name__}")
        if key in ("$and", "$or"):
            if not isinstance(value, Sequence) or isinstance(value, str | bytes) or not value:
                raise InvalidFilterError("where", f"{key} takes a non-empty list of filters")
            if len(value) > MAX_BRANCHES:
                raise InvalidFilterError(
                    "where",
                    f"{key} lists {len(value)} filters, more than {MAX_BRANCHES}; put many "
                    "values of one key in one $in (or $nin, $any) list instead",
                )
            items = [self.node(item, depth + 1) for item in value]
            if key == "$and" or len(items) == 1:
                return _all(items)
            return AnyOf(tuple(items))
        if key == "$not":
            return Not(self.node(value, depth + 1))
        if key.startswith("$"):
            raise InvalidFilterError("where", f"unknown logical operator {key!r}")
        _check_key(key)
        if (
            isinstance(value, Mapping)
            and value
            and all(isinstance(op, str) and op.startswith("$") for op in value)
        ):
            return _all([self.test(key, op, arg) for op, arg in value.items()])
        if isinstance(value, Mapping | list | tuple):
            raise InvalidFilterError(
                "where", f"{key!r}: equality takes a scalar; use $in, $all or an operator object"
            )
        return self.test(key, "$eq", value)

    def test(self, key: str, op: str, arg: object) -> Test:
        test = Test(key, op, _operand(key, op, arg))
        self.spend(condition_cost(test))
        return test


def _all(clauses: list[Clause]) -> Clause:
    return clauses[0] if len(clauses) == 1 else All(tuple(clauses))


def _operand(key: str, op: str, arg: object) -> Scalar | tuple[Scalar, ...]:
    """Validate ``arg`` for ``op`` and return it in the tree's form."""
    if op not in OPERATORS:
        raise InvalidFilterError("where", f"unknown operator {op!r} on key {key!r}")
    if op in ("$exists", "$empty"):
        if not isinstance(arg, bool):
            raise InvalidFilterError("where", f"{op} on {key!r} takes true or false")
        return arg
    if op in ("$in", "$nin", "$all", "$any"):
        values = _list(arg, key, op)
        if op == "$all" and len(values) > MAX_ALL_VALUES:
            raise InvalidFilterError("where", f"$all on {key!r} takes at most {MAX_ALL_VALUES}")
        return values
    if op in COMPARISONS and not (is_number(arg) or isinstance(arg, str)):
        raise InvalidFilterError("where", f"{op} on {key!r} takes a number or a string")
    if op in TEXT_OPERATORS and not isinstance(arg, str):
        raise InvalidFilterError("where", f"{op} on {key!r} takes a string")
    return _scalar(arg, key, op)


def _check_key(key: str) -> None:
    if not key or "\x00" in key:
        raise InvalidFilterError("where", f"invalid key {key!r}: empty or contains NUL")
    _encodable(key, key, "key")


def _encodable(text: str, key: str, op: str) -> None:
    # Keys and values are bound as UTF-8: a lone surrogate would surface as a raw
    # UnicodeEncodeError from the database; it can never match stored metadata anyway.
    if has_surrogates(text):
        raise InvalidFilterError("where", f"{op} on {key!r}: unpaired surrogate")


def _scalar(arg: object, key: str, op: str) -> Scalar:
    if isinstance(arg, str):
        _encodable(arg, key, op)
        return arg
    if arg is None or isinstance(arg, bool):
        return arg
    if isinstance(arg, int):
        if not _INT64[0] <= arg <= _INT64[1]:
            raise InvalidFilterError("where", f"{op} on {key!r}: integer outside 64-bit range")
        return arg
    if isinstance(arg, float):
        if not math.isfinite(arg):
            raise InvalidFilterError("where", f"{op} on {key!r}: NaN and infinity never match")
        return arg
    raise InvalidFilterError(
        "where", f"{op} on {key!r} takes a JSON scalar, got {type(arg).__name__}"
    )


def _list(arg: object, key: str, op: str) -> tuple[Scalar, ...]:
    if not isinstance(arg, Sequence) or isinstance(arg, str | bytes):
        raise InvalidFilterError("where", f"{op} on {key!r} takes a list of scalars")
    return tuple(_scalar(value, key, op) for value in arg)
