"""The ``where`` language, compiled to parameterised SQL.

A filter is a JSON object over a memory's top-level metadata keys::

    {"topic": "drinks"}                                  # equality shorthand
    {"year": {"$gte": 2020, "$lt": 2025}}                # several operators: AND
    {"$or": [{"a": 1}, {"$not": {"tags": {"$contains": "x"}}}]}

Operators: ``$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $all $any``,
the string operators ``$match`` (substring) and ``$imatch`` (case-insensitive
substring), and ``$empty`` (absent, null, ``""`` or ``[]``),
combined with ``$and``, ``$or`` and ``$not`` to any depth (up to
:data:`MAX_DEPTH`). A filter compiles to at most :data:`MAX_CONDITIONS`
conditions and a ``$and``/``$or`` lists at most :data:`MAX_BRANCHES`. The full
semantics live in ``docs/reference/where.md``; in short, an absent key is a
non-match except for ``$ne``, ``$nin`` and ``$exists: false``, which it
satisfies (as in MongoDB and LlamaIndex), and a present value whose type an
operator cannot compare (``{"$gt": 3}`` against a string, ``$contains``
against a non-list) raises :class:`FilterTypeError`.

Nothing the caller writes reaches SQL text: keys and values are bound
parameters, operators select engine-written SQL snippets, and metadata is read
through ``json_each`` with the key as a parameter. Type errors are raised from
inside the query by the ``em_filter_type_error`` SQL function, which the
storage layer registers on every connection.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from embedmind.checks import has_surrogates, is_number
from embedmind.errors import FilterTypeError, InvalidFilterError

MAX_DEPTH = 32
MAX_ALL_VALUES = 1_000
MAX_CONDITIONS = 2_000
"""Most conditions one filter may compile to: each key test is one, each ``$all``
value one more, and each comparison or list operator one more (its type check);
a ``$in`` list is one whatever its length. Each condition is a correlated
subquery, and SQLite's statement preparation grows with their square (about
0.5 s at 2,000, 2.5 s at 4,000); the balanced joins keep the expression far
below SQLite's depth limit (1,000), and 2,000 conditions bind at most 6,000 of
its 32,766 values."""
MAX_BRANCHES = MAX_CONDITIONS
"""Most filters a ``$and`` or ``$or`` may list (each is at least one condition
unless it is empty, so a longer list is refused before it is compiled)."""
TYPE_ERROR_FUNCTION = "em_filter_type_error"
_INT64 = (-(2**63), 2**63 - 1)
_NUMBER_TYPES = "('integer','real')"
_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_LIST_OPERATORS = ("$contains", "$all", "$any")
_TEXT_OPERATORS = ("$match", "$imatch")
LOWER_FUNCTION = "em_lower"
OPERATORS = frozenset(
    {"$eq", "$ne", "$in", "$nin", "$exists", "$empty"}
    | set(_COMPARISONS)
    | set(_LIST_OPERATORS)
    | set(_TEXT_OPERATORS)
)
_EMPTY = (
    "(je.type = 'null' OR (je.type = 'text' AND je.value = '') "
    "OR (je.type = 'array' AND je.value = '[]'))"
)


@dataclass(frozen=True)
class CompiledFilter:
    """A compiled ``where``.

    Attributes:
        match: SQL condition that is true for matching rows.
        match_params: Its parameters, in order.
        check: SQL condition that raises ``FilterTypeError`` (through the SQL
            function) for a row with an incomparable stored type, else false;
            ``"0"`` when the filter has no type-sensitive operator.
        check_params: Its parameters, in order.
    """

    match: str
    match_params: tuple[Any, ...]
    check: str
    check_params: tuple[Any, ...]


def raise_type_error(key: object, operator: object) -> int:
    """Raise :class:`FilterTypeError`; registered as the ``em_filter_type_error`` SQL function."""
    wanted = "a list" if operator in _LIST_OPERATORS else "a value of the operand's type"
    raise FilterTypeError(
        str(key), str(operator), f"a memory in scope stores a value that is not {wanted}"
    )


def compile_where(where: Mapping[str, Any] | None, metadata_column: str) -> CompiledFilter | None:
    """Compile a ``where`` filter into SQL over a JSON metadata column.

    Args:
        where: The filter, or ``None``/``{}`` for no filter.
        metadata_column: The trusted column expression holding metadata JSON.

    Returns:
        The compiled filter, or ``None`` when there is nothing to filter.

    Raises:
        InvalidFilterError: When the filter is malformed.
    """
    if where is None:
        return None
    compiler = _Compiler(metadata_column)
    match, params = compiler.node(where, depth=0)
    if match == "1":
        return None
    check = _join([(sql, []) for sql in compiler.checks], "OR")[0] if compiler.checks else "0"
    return CompiledFilter(match, tuple(params), f"({check})", tuple(compiler.check_params))


Sql = tuple[str, list[Any]]


class _Compiler:
    """Builds (sql, params) pairs; params always follow the textual order of ``?``."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.checks: list[str] = []
        self.check_params: list[Any] = []
        self.conditions = 0

    def spend(self, count: int = 1) -> None:
        """Count ``count`` more conditions; refuse past :data:`MAX_CONDITIONS`.

        Past it, SQLite's own limits (or minutes of statement preparation) would
        surface as a StorageError naming a statement the caller never wrote.
        """
        self.conditions += count
        if self.conditions > MAX_CONDITIONS:
            raise InvalidFilterError(
                "where",
                f"compiles to more than {MAX_CONDITIONS} conditions (each key test, $all value "
                "and type check of a comparison or list operator is one); put many values of "
                "one key in one $in (or $nin, $any) list, which is one condition, or split "
                "the query",
            )

    def node(self, where: object, depth: int) -> Sql:
        if not isinstance(where, Mapping):
            raise InvalidFilterError("where", f"expected an object, got {type(where).__name__}")
        if depth > MAX_DEPTH:
            raise InvalidFilterError("where", f"nested deeper than {MAX_DEPTH} levels")
        return _join([self.clause(key, value, depth) for key, value in where.items()], "AND")

    def clause(self, key: object, value: object, depth: int) -> Sql:
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
            return _join([self.node(item, depth + 1) for item in value], key[1:].upper())
        if key == "$not":
            sql, params = self.node(value, depth + 1)
            return f"(NOT {sql})", params
        if key.startswith("$"):
            raise InvalidFilterError("where", f"unknown logical operator {key!r}")
        _check_key(key)
        if (
            isinstance(value, Mapping)
            and value
            and all(isinstance(op, str) and op.startswith("$") for op in value)
        ):
            return _join([self.leaf(key, op, arg) for op, arg in value.items()], "AND")
        if isinstance(value, Mapping | list | tuple):
            raise InvalidFilterError(
                "where", f"{key!r}: equality takes a scalar; use $in, $all or an operator object"
            )
        return self.leaf(key, "$eq", value)

    def leaf(self, key: str, op: str, arg: object) -> Sql:
        if op not in OPERATORS:
            raise InvalidFilterError("where", f"unknown operator {op!r} on key {key!r}")
        if op == "$exists":
            if not isinstance(arg, bool):
                raise InvalidFilterError("where", f"$exists on {key!r} takes true or false")
            return _negate_unless(arg, self.entry(key, ("1", [])))
        if op in ("$eq", "$ne"):
            _scalar(arg, key, op)
            return _negate_unless(op == "$eq", self.entry(key, _equals_sql("je", arg)))
        if op in ("$in", "$nin"):
            values = _list(arg, key, op)
            return _negate_unless(op == "$in", self.entry(key, _one_of_sql("je", values)))
        if op in _COMPARISONS:
            return self.comparison(key, op, arg)
        if op in _TEXT_OPERATORS:
            if not isinstance(arg, str):
                raise InvalidFilterError("where", f"{op} on {key!r} takes a string")
            _scalar(arg, key, op)
            if op == "$match":
                return self.entry(key, ("je.type = 'text' AND instr(je.value, ?) > 0", [arg]))
            sql = f"je.type = 'text' AND instr({LOWER_FUNCTION}(je.value), {LOWER_FUNCTION}(?)) > 0"
            return self.entry(key, (sql, [arg]))
        if op == "$empty":
            if not isinstance(arg, bool):
                raise InvalidFilterError("where", f"$empty on {key!r} takes true or false")
            absent, empty = self.entry(key, ("1", [])), self.entry(key, (_EMPTY, []))
            sql = f"((NOT {absent[0]}) OR {empty[0]})"
            return _negate_unless(arg, (sql, [*absent[1], *empty[1]]))
        return self.list_operator(key, op, arg)

    def entry(self, key: str, condition: Sql) -> Sql:
        """EXISTS over the top-level entry ``key`` (bound, never spliced into a path)."""
        sql, params = condition
        self.spend()
        return (
            f"EXISTS (SELECT 1 FROM json_each({self.column}) AS je WHERE je.key = ? AND {sql})",
            [key, *params],
        )

    def comparison(self, key: str, op: str, arg: object) -> Sql:
        if not (is_number(arg) or isinstance(arg, str)):
            raise InvalidFilterError("where", f"{op} on {key!r} takes a number or a string")
        _scalar(arg, key, op)
        wanted = "je.type = 'text'" if isinstance(arg, str) else f"je.type IN {_NUMBER_TYPES}"
        self.add_check(key, op, f"NOT ({wanted})")
        return self.entry(key, (f"{wanted} AND je.value {_COMPARISONS[op]} ?", [arg]))

    def list_operator(self, key: str, op: str, arg: object) -> Sql:
        if op == "$contains":
            _scalar(arg, key, op)
            values = [arg]
        else:
            values = _list(arg, key, op)
        if op == "$all" and len(values) > MAX_ALL_VALUES:
            raise InvalidFilterError("where", f"$all on {key!r} takes at most {MAX_ALL_VALUES}")
        self.add_check(key, op, "je.type <> 'array'")
        if op == "$all":
            self.spend(len(values))  # one subquery per value
            parts = [_element_exists(_equals_sql("el", v)) for v in values]
            inner = _join(parts, "AND") if parts else ("1", [])
        elif values:
            self.spend()
            inner = _element_exists(_one_of_sql("el", values))
        else:
            return "0", []
        sql, params = inner
        return self.entry(key, (f"je.type = 'array' AND {sql}", params))

    def add_check(self, key: str, op: str, mismatch: str) -> None:
        # True only through the raising SQL function: a row whose stored type
        # disagrees aborts the query with FilterTypeError.
        self.checks.append(
            f"EXISTS (SELECT 1 FROM json_each({self.column}) AS je WHERE je.key = ? "
            f"AND ({mismatch}) AND {TYPE_ERROR_FUNCTION}(?, ?))"
        )
        self.spend()
        self.check_params += [key, key, op]


def _join(parts: list[Sql], joiner: str) -> Sql:
    """Join conditions as a balanced, parenthesised tree.

    SQLite parses ``a OR b OR c ...`` as a left-deep tree and refuses one deeper
    than its expression depth limit (1,000): a flat 990-way ``$or`` failed. A
    balanced tree is ``log2(n)`` deep, so only :data:`MAX_CONDITIONS` bounds
    the number of conditions.
    """
    if not parts:
        return "1", []
    if len(parts) == 1:
        return parts[0]
    half = len(parts) // 2
    left, right = _join(parts[:half], joiner), _join(parts[half:], joiner)
    return f"({left[0]} {joiner} {right[0]})", [*left[1], *right[1]]


def _negate_unless(keep: bool, condition: Sql) -> Sql:
    sql, params = condition
    return (sql, params) if keep else (f"(NOT {sql})", params)


def _element_exists(condition: Sql) -> Sql:
    sql, params = condition
    return f"EXISTS (SELECT 1 FROM json_each(je.value) AS el WHERE {sql})", params


def _check_key(key: str) -> None:
    if not key or "\x00" in key:
        raise InvalidFilterError("where", f"invalid key {key!r}: empty or contains NUL")
    _encodable(key, key, "key")


def _encodable(text: str, key: str, op: str) -> None:
    # Keys and values are bound as UTF-8: a lone surrogate would surface as a raw
    # UnicodeEncodeError from SQLite; it can never match stored metadata anyway.
    if has_surrogates(text):
        raise InvalidFilterError("where", f"{op} on {key!r}: unpaired surrogate")


def _scalar(arg: object, key: str, op: str) -> None:
    if isinstance(arg, str):
        _encodable(arg, key, op)
        return
    if arg is None or isinstance(arg, bool):
        return
    if isinstance(arg, int):
        if not _INT64[0] <= arg <= _INT64[1]:
            raise InvalidFilterError("where", f"{op} on {key!r}: integer outside 64-bit range")
        return
    if isinstance(arg, float):
        if not math.isfinite(arg):
            raise InvalidFilterError("where", f"{op} on {key!r}: NaN and infinity never match")
        return
    raise InvalidFilterError(
        "where", f"{op} on {key!r} takes a JSON scalar, got {type(arg).__name__}"
    )


def _list(arg: object, key: str, op: str) -> list[Any]:
    if not isinstance(arg, Sequence) or isinstance(arg, str | bytes):
        raise InvalidFilterError("where", f"{op} on {key!r} takes a list of scalars")
    values = list(arg)
    for value in values:
        _scalar(value, key, op)
    return values


def _equals_sql(alias: str, arg: object) -> Sql:
    """SQL for JSON equality of one ``json_each`` row (``alias``) with a scalar."""
    value, typ = f"{alias}.value", f"{alias}.type"
    if arg is None:
        return f"{typ} = 'null'", []
    if arg is True:
        return f"{typ} = 'true'", []
    if arg is False:
        return f"{typ} = 'false'", []
    if isinstance(arg, str):
        return f"({typ} = 'text' AND {value} = ?)", [arg]
    return f"({typ} IN {_NUMBER_TYPES} AND {value} = ?)", [arg]


def _one_of_sql(alias: str, args: list[Any]) -> Sql:
    """SQL for "equals one of ``args``"; big lists travel as one JSON parameter."""
    value, typ = f"{alias}.value", f"{alias}.type"
    numbers = [a for a in args if is_number(a)]
    texts = [a for a in args if isinstance(a, str)]
    parts: list[str] = []
    params: list[Any] = []
    if numbers:
        parts.append(f"({typ} IN {_NUMBER_TYPES} AND {value} IN (SELECT value FROM json_each(?)))")
        params.append(json.dumps(numbers))
    if texts:
        parts.append(f"({typ} = 'text' AND {value} IN (SELECT value FROM json_each(?)))")
        params.append(json.dumps(texts, ensure_ascii=False))
    for literal, name in ((None, "null"), (True, "true"), (False, "false")):
        if any(a is literal for a in args):
            parts.append(f"{typ} = '{name}'")
    return ("(" + " OR ".join(parts) + ")" if parts else "0"), params


def lower(value: object) -> object:
    """Python's ``str.lower``, registered as the ``em_lower`` SQL function."""
    return value.lower() if isinstance(value, str) else value
