"""A parsed ``where`` (:mod:`embedmind.query.where`) compiled to PostgreSQL over ``jsonb``.

The semantics are the language's (``docs/reference/where.md``), the same as the
SQLite backend's, checked against the plain-Python oracle
(``tests/postgres/test_where_sql.py``):

* a top-level value is ``metadata -> key`` with the key a bound parameter (a
  key never reaches SQL text); an absent key is SQL ``NULL``, a JSON ``null``
  the ``jsonb`` ``null``;
* equality is ``jsonb`` equality — numbers compare as ``numeric`` (``1`` equals
  ``1.0``, and integers beyond 2**53 stay exact), strings byte for byte, ``true``
  is not ``1`` — and ``$eq`` is written as containment (``metadata @>
  {"key": value}``), which the ``jsonb_path_ops`` GIN index serves;
* comparisons take numbers as ``numeric`` and strings in ``COLLATE "C"`` (code
  point order, as SQLite's ``BINARY``);
* ``$contains``/``$all``/``$any`` are array containment of single elements;
* ``$imatch`` folds both sides with PostgreSQL 18's ``casefold`` under the
  built-in ``pg_unicode_fast`` collation (:data:`FOLD_SQL`): Unicode full case
  folding, the language's :func:`~embedmind.query.where.fold` (Python's
  ``str.casefold``) — equal for every code point Python's Unicode database
  assigns (``tests/postgres/test_imatch_fold.py`` checks each one). The
  ``lower(... COLLATE pg_c_utf8)`` before it was simple lowercase mapping: it
  took ``"İ"`` to ``"i"``, and left ``"ß"`` and final ``"ς"`` alone;
* a present value whose type an operator cannot compare raises
  :class:`~embedmind.errors.FilterTypeError` from inside the query, through
  the ``em_filter_type_error`` function (migration 2), and the selection's
  ``CASE`` makes every row in scope checked before it is matched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from embedmind.errors import FilterTypeError
from embedmind.query.where import COMPARISONS, All, AnyOf, Clause, Not, Scalar, Test, type_error

TYPE_ERROR_FUNCTION = "em_filter_type_error"
TYPE_ERROR_MARK = "embedmind filter type error"
"""The message prefix the SQL function raises with; :func:`as_type_error` reads it back."""
_SQL_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
FOLD_SQL = "casefold({} COLLATE pg_unicode_fast)"
"""``$imatch``'s case folding of a text expression (``{}``): PostgreSQL 18 or newer."""

Part = tuple[sql.Composable, list[Any]]


@dataclass(frozen=True)
class CompiledFilter:
    """A compiled ``where``: ``match`` is true for matching rows; ``check`` raises or is false."""

    match: sql.Composable
    match_params: tuple[Any, ...]
    check: sql.Composable
    check_params: tuple[Any, ...]


def compile_where(where: Clause | None, metadata: sql.Composable) -> CompiledFilter | None:
    """Compile a parsed filter into SQL over the ``jsonb`` column expression ``metadata``."""
    if where is None:
        return None
    compiler = _Compiler(metadata)
    match, params = compiler.node(where)
    check: sql.Composable = sql.SQL("false")
    if compiler.checks:
        check = sql.SQL("({})").format(sql.SQL(" OR ").join(compiler.checks))
    return CompiledFilter(match, tuple(params), check, tuple(compiler.check_params))


def as_type_error(exc: BaseException) -> FilterTypeError | None:
    """The :class:`FilterTypeError` a database error carries, if it is the filter's own."""
    diag = getattr(exc, "diag", None)
    message = getattr(diag, "message_primary", None) or ""
    if not message.startswith(TYPE_ERROR_MARK):
        return None
    detail = json.loads(getattr(diag, "message_detail", None) or "{}")
    return type_error(detail.get("key", "?"), detail.get("op", "?"))


class _Compiler:
    def __init__(self, metadata: sql.Composable) -> None:
        self.metadata = metadata
        self.checks: list[sql.Composable] = []
        self.check_params: list[Any] = []

    def value(self) -> sql.Composable:
        return sql.SQL("({} -> %s::text)").format(self.metadata)

    def node(self, clause: Clause) -> Part:
        if isinstance(clause, All | AnyOf):
            joiner = " AND " if isinstance(clause, All) else " OR "
            parts = [self.node(c) for c in clause.clauses]
            if not parts:
                return sql.SQL("true"), []
            return (
                sql.SQL("({})").format(sql.SQL(joiner).join(p for p, _ in parts)),
                [v for _, params in parts for v in params],
            )
        if isinstance(clause, Not):
            inner, params = self.node(clause.clause)
            # NOT over SQL NULL would be NULL: every leaf below is NULL-free.
            return sql.SQL("(NOT {})").format(inner), params
        return self.leaf(clause)

    def leaf(self, test: Test) -> Part:
        key, op, arg = test.key, test.op, test.value
        v = self.value()
        if op == "$exists":
            return sql.SQL("({} IS {} NULL)").format(v, sql.SQL("NOT" if arg else "")), [key]
        if op in ("$eq", "$ne"):
            contains = sql.SQL("({} @> %s::jsonb)").format(self.metadata)
            part = (contains, [json.dumps({key: arg})])
            return part if op == "$eq" else _not(part)
        if op in ("$in", "$nin"):
            part = (
                sql.SQL("coalesce({} IN (SELECT jsonb_array_elements(%s::jsonb)), false)").format(
                    v
                ),
                [key, json.dumps(list(_values(arg)))],
            )
            return part if op == "$in" else _not(part)
        if op in COMPARISONS:
            return self.comparison(key, op, arg)
        if op in ("$match", "$imatch"):
            text = sql.SQL("({} #>> '{{}}')").format(v)
            found = "strpos({t}, %s::text)"
            if op == "$imatch":  # both sides folded here, by one function
                found = f"strpos({FOLD_SQL.format('{t}')}, {FOLD_SQL.format('%s::text')})"
            template = "coalesce(jsonb_typeof({v}) = 'string' AND " + found + " > 0, false)"
            return sql.SQL(template).format(v=v, t=text), [key, key, arg]
        if op == "$empty":
            empty = sql.SQL(
                "({v} IS NULL OR {v} IN ('null'::jsonb, '\"\"'::jsonb, '[]'::jsonb))"
            ).format(v=v)
            part = (empty, [key, key])
            return part if arg else _not(part)
        return self.list_operator(key, op, arg)

    def comparison(self, key: str, op: str, arg: Scalar | tuple[Scalar, ...]) -> Part:
        v, symbol = self.value(), sql.SQL(_SQL_COMPARISONS[op])
        if isinstance(arg, str):
            wanted = "string"
            test = sql.SQL("({v} #>> '{{}}') COLLATE \"C\" {s} %s::text").format(v=v, s=symbol)
            operand: Any = arg
        else:
            wanted = "number"
            test = sql.SQL("({v})::numeric {s} %s::numeric").format(v=v, s=symbol)
            operand = json.dumps(arg)
        self.add_check(key, op, wanted)
        return (
            sql.SQL("coalesce(jsonb_typeof({v}) = %s AND {t}, false)").format(v=v, t=test),
            [key, wanted, key, operand],
        )

    def list_operator(self, key: str, op: str, arg: Scalar | tuple[Scalar, ...]) -> Part:
        v = self.value()
        self.add_check(key, op, "array")
        values = json.dumps(list(_values(arg)))
        inner: sql.Composable
        if op == "$any":
            if not _values(arg):
                return sql.SQL("false"), []
            inner = sql.SQL(
                "EXISTS (SELECT 1 FROM jsonb_array_elements(%s::jsonb) x "
                "WHERE {v} @> jsonb_build_array(x))"
            ).format(v=v)
            inner_params = [values, key]
        else:  # $contains one element, $all every one: array containment of elements
            inner = sql.SQL("({v} @> %s::jsonb)").format(v=v)
            inner_params = [key, values]
        return (
            sql.SQL("coalesce(jsonb_typeof({v}) = 'array' AND {i}, false)").format(v=v, i=inner),
            [key, *inner_params],
        )

    def add_check(self, key: str, op: str, wanted: str) -> None:
        v = self.value()
        self.checks.append(
            sql.SQL(
                "({v} IS NOT NULL AND jsonb_typeof({v}) <> %s AND {f}(%s::text, %s::text))"
            ).format(v=v, f=sql.Identifier(TYPE_ERROR_FUNCTION))
        )
        self.check_params += [key, key, wanted, key, op]


def _not(part: Part) -> Part:
    return sql.SQL("(NOT {})").format(part[0]), part[1]


def _values(arg: Scalar | tuple[Scalar, ...]) -> Sequence[Scalar]:
    # The parser made list operands tuples of scalars; they travel as one JSON
    # array, numbers as JSON numbers, so the jsonb comparison is numeric.
    return arg if isinstance(arg, tuple) else (arg,)
