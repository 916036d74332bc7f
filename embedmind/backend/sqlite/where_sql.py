"""A parsed ``where`` (:mod:`embedmind.query.where`) compiled to parameterised SQLite SQL.

Nothing the caller writes reaches SQL text: keys and values are bound
parameters, operators select engine-written SQL snippets, and metadata is read
through ``json_each`` with the key as a parameter. Type errors are raised from
inside the query by the ``em_filter_type_error`` SQL function, and ``$imatch``
folds case with ``em_casefold`` (the language's own
:func:`~embedmind.query.where.fold`, so exact by construction), both of which
:mod:`embedmind.backend.sqlite.connection` registers on every connection.
Conditions are joined as balanced trees, so only
:data:`embedmind.query.where.MAX_CONDITIONS` bounds their number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from embedmind.checks import is_number
from embedmind.query.where import (
    COMPARISONS,
    All,
    AnyOf,
    Clause,
    Not,
    Scalar,
    Test,
    fold,
    type_error,
)

TYPE_ERROR_FUNCTION = "em_filter_type_error"
FOLD_FUNCTION = "em_casefold"
_NUMBER_TYPES = "('integer','real')"
_SQL_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_EMPTY = (
    "(je.type = 'null' OR (je.type = 'text' AND je.value = '') "
    "OR (je.type = 'array' AND je.value = '[]'))"
)

Sql = tuple[str, list[Any]]


@dataclass(frozen=True)
class CompiledFilter:
    """A compiled ``where``.

    Attributes:
        match: SQL condition that is true for matching rows.
        match_params: Its parameters, in order.
        check: SQL condition that raises ``FilterTypeError`` (through the SQL
            function) for a row with an incomparable stored type, else false;
            ``"(0)"`` when the filter has no type-sensitive operator.
        check_params: Its parameters, in order.
    """

    match: str
    match_params: tuple[Any, ...]
    check: str
    check_params: tuple[Any, ...]


def raise_type_error(key: object, operator: object) -> int:
    """Raise :class:`FilterTypeError`; registered as the ``em_filter_type_error`` SQL function."""
    raise type_error(key, operator)


def fold_sql(value: object) -> object:
    """:func:`~embedmind.query.where.fold` of a text, registered as ``em_casefold``."""
    return fold(value) if isinstance(value, str) else value


def compile_where(where: Clause | None, metadata_column: str) -> CompiledFilter | None:
    """Compile a parsed filter into SQL over a JSON metadata column.

    Args:
        where: The parsed filter, or ``None`` for no filter.
        metadata_column: The trusted column expression holding metadata JSON.

    Returns:
        The compiled filter, or ``None`` when there is nothing to filter.
    """
    if where is None:
        return None
    compiler = _Compiler(metadata_column)
    match, params = compiler.node(where)
    if match == "1":
        return None
    check = _join([(sql, []) for sql in compiler.checks], "OR")[0] if compiler.checks else "0"
    return CompiledFilter(match, tuple(params), f"({check})", tuple(compiler.check_params))


class _Compiler:
    """Builds (sql, params) pairs; params always follow the textual order of ``?``."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.checks: list[str] = []
        self.check_params: list[Any] = []

    def node(self, clause: Clause) -> Sql:
        if isinstance(clause, All):
            return _join([self.node(c) for c in clause.clauses], "AND")
        if isinstance(clause, AnyOf):
            return _join([self.node(c) for c in clause.clauses], "OR")
        if isinstance(clause, Not):
            sql, params = self.node(clause.clause)
            return f"(NOT {sql})", params
        return self.leaf(clause)

    def leaf(self, test: Test) -> Sql:
        key, op, arg = test.key, test.op, test.value
        if op == "$exists":
            return _negate_unless(bool(arg), self.entry(key, ("1", [])))
        if op in ("$eq", "$ne"):
            return _negate_unless(op == "$eq", self.entry(key, _equals_sql("je", arg)))
        if op in ("$in", "$nin"):
            values = _values(arg)
            return _negate_unless(op == "$in", self.entry(key, _one_of_sql("je", values)))
        if op in COMPARISONS:
            return self.comparison(key, op, arg)
        if op == "$match":
            return self.entry(key, ("je.type = 'text' AND instr(je.value, ?) > 0", [arg]))
        if op == "$imatch":
            # The needle is folded here, once, by the same function the rows are folded by.
            sql = f"je.type = 'text' AND instr({FOLD_FUNCTION}(je.value), ?) > 0"
            return self.entry(key, (sql, [fold(str(arg))]))
        if op == "$empty":
            absent, empty = self.entry(key, ("1", [])), self.entry(key, (_EMPTY, []))
            sql = f"((NOT {absent[0]}) OR {empty[0]})"
            return _negate_unless(bool(arg), (sql, [*absent[1], *empty[1]]))
        return self.list_operator(key, op, arg)

    def entry(self, key: str, condition: Sql) -> Sql:
        """EXISTS over the top-level entry ``key`` (bound, never spliced into a path)."""
        sql, params = condition
        return (
            f"EXISTS (SELECT 1 FROM json_each({self.column}) AS je WHERE je.key = ? AND {sql})",
            [key, *params],
        )

    def comparison(self, key: str, op: str, arg: object) -> Sql:
        wanted = "je.type = 'text'" if isinstance(arg, str) else f"je.type IN {_NUMBER_TYPES}"
        self.add_check(key, op, f"NOT ({wanted})")
        return self.entry(key, (f"{wanted} AND je.value {_SQL_COMPARISONS[op]} ?", [arg]))

    def list_operator(self, key: str, op: str, arg: object) -> Sql:
        values = _values(arg)
        self.add_check(key, op, "je.type <> 'array'")
        if op == "$all":
            parts = [_element_exists(_equals_sql("el", v)) for v in values]
            inner = _join(parts, "AND") if parts else ("1", [])
        elif values:
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
        self.check_params += [key, key, op]


def _values(arg: object) -> list[Scalar]:
    # The parser made list operands tuples of scalars.
    return list(arg) if isinstance(arg, tuple) else [arg]  # type: ignore[list-item]


def _join(parts: list[Sql], joiner: str) -> Sql:
    """Join conditions as a balanced, parenthesised tree.

    SQLite parses ``a OR b OR c ...`` as a left-deep tree and refuses one deeper
    than its expression depth limit (1,000): a flat 990-way ``$or`` failed. A
    balanced tree is ``log2(n)`` deep.
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


def _one_of_sql(alias: str, args: list[Scalar]) -> Sql:
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
