"""The metadata index: each memory's top-level metadata entries, and filters compiled to it.

Metadata is one JSON column, so a ``where`` filter alone reads every row's
JSON (a vector query filtered to 1 % of 100k memories spent 0.5 s parsing
all 100k). The ``memory_fields`` table holds every top-level entry of every
row — ``(name, type, value, key)`` with ``json_each``'s type and value, and
one more row per scalar element of a top-level array (type ``'[text'``,
``'[integer'``...) — as one covering primary key, so an equality, a range or
a list membership on one key is an index range of the rows it admits.

Triggers on ``memories`` keep it in step inside the writing transaction, so
every write path (insert, upsert, import, delete) maintains it without knowing
it exists. Entries of null, arrays and objects store ``''`` as their value
(the primary key admits no NULL); the type tells them apart.

:func:`compile_probe` turns a parsed filter into a query of memory keys that
is a **superset** of the rows the filter admits, or ``None`` when no index
range bounds it (``$ne``, ``$not``...). Callers still apply the full compiled
condition to the candidates, so the probe decides only which rows are read,
never which rows match. A type-checked operator (a comparison, a list
operator) adds the rows whose entry under its key has a type it cannot
compare, so :class:`~embedmind.errors.FilterTypeError` is raised on the same
stores whichever rows the plan reads.
"""

from __future__ import annotations

import json
from typing import Any

from embedmind.checks import is_number
from embedmind.query.where import COMPARISONS, All, AnyOf, Clause, Not, Scalar, Test

TABLE = "memory_fields"
_TOP_TYPES = ("null", "true", "false", "integer", "real", "text", "array", "object")
_NUMBERS = ("integer", "real")
_RANGE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}

Sql = tuple[str, list[Any]]
MAX_TERMS = 100
"""Terms of one compound ``SELECT`` (SQLite refuses more than 500: an ``$or`` of as many
conditions as a filter may hold would exceed it)."""


def _entries(row: str, rows: str = "") -> str:
    """SELECT of ``(name, type, value, key)`` for the metadata of ``row`` (``NEW``, ``OLD``, ``m``).

    ``rows`` is the FROM item that ``row`` names, if any (``"memories AS m, "``
    for the backfill; a trigger's row needs none). A value that is not valid
    JSON (a damaged row) contributes nothing rather than failing the write
    that repairs it.
    """
    column = f"{row}.metadata"
    doc = f"CASE WHEN json_valid({column}) THEN {column} ELSE '{{}}' END"
    return (
        "SELECT je.key, je.type, "
        f"CASE WHEN je.type IN ('null', 'array', 'object') THEN '' ELSE je.value END, {row}.key "
        f"FROM {rows}json_each({doc}) AS je "
        "UNION ALL "
        f"SELECT je.key, '[' || el.type, CASE WHEN el.type = 'null' THEN '' ELSE el.value END, "
        f"{row}.key FROM {rows}json_each({doc}) AS je, "
        "json_each(CASE WHEN je.type = 'array' THEN je.value ELSE '[]' END) AS el "
        "WHERE el.type NOT IN ('array', 'object')"
    )


def _insert(row: str, rows: str = "") -> str:
    return f"INSERT OR IGNORE INTO {TABLE} (name, type, value, key) {_entries(row, rows)};"


def _delete(row: str) -> str:
    # The row's own entries, each one primary-key seek: no index on key alone.
    return f"DELETE FROM {TABLE} WHERE (name, type, value, key) IN ({_entries(row)});"


SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    value ANY NOT NULL,
    key INTEGER NOT NULL,
    PRIMARY KEY (name, type, value, key)
) WITHOUT ROWID, STRICT;
CREATE TRIGGER IF NOT EXISTS memory_fields_after_insert AFTER INSERT ON memories BEGIN
    {_insert("NEW")}
END;
CREATE TRIGGER IF NOT EXISTS memory_fields_after_update AFTER UPDATE OF metadata ON memories
WHEN OLD.metadata IS NOT NEW.metadata BEGIN
    {_delete("OLD")}
    {_insert("NEW")}
END;
CREATE TRIGGER IF NOT EXISTS memory_fields_after_delete AFTER DELETE ON memories BEGIN
    {_delete("OLD")}
END;
"""
"""The table and the triggers that maintain it (migration 8; idempotent, as is the backfill,
so a file whose version was set back re-runs it harmlessly)."""

BACKFILL = _insert("m", "memories AS m, ")
"""Index the rows a store held before the table existed (migration 8)."""


def compile_probe(where: Clause | None) -> Sql | None:
    """A query of memory keys that includes every row ``where`` admits, or ``None``.

    ``None`` means no index range bounds the filter (``$ne``, ``$nin``,
    ``$not``, ``$exists: false``, ``$empty``, or an ``$or`` with such a
    branch): every row must be read. The keys may repeat and may include rows
    the filter rejects (or forgotten ones); the caller applies the full
    condition to them.

    Args:
        where: The parsed filter, or ``None``.

    Returns:
        ``(sql, params)`` of a ``SELECT key`` over :data:`TABLE`, or ``None``.
    """
    if where is None:
        return None
    checks: list[Sql] = []
    matched = _probe(where, checks)
    if matched is None:
        return None
    return combine([matched, *checks], "UNION")


def _probe(clause: Clause, checks: list[Sql]) -> Sql | None:
    """The probe of one node; type-checked tests also append their mismatch probe to ``checks``."""
    if isinstance(clause, Not):
        _probe(clause.clause, checks)  # unbounded, but its type-checked tests still raise
        return None
    if isinstance(clause, All):
        parts = [_probe(c, checks) for c in clause.clauses]
        bounded = [p for p in parts if p is not None]
        return combine(bounded, "INTERSECT") if bounded else None
    if isinstance(clause, AnyOf):
        parts = [_probe(c, checks) for c in clause.clauses]
        if not parts or any(p is None for p in parts):
            return None
        return combine([p for p in parts if p is not None], "UNION")
    return _test(clause, checks)


def _test(test: Test, checks: list[Sql]) -> Sql | None:
    key, op, arg = test.key, test.op, test.value
    if op == "$eq":
        return _scalars(key, [arg], "")  # type: ignore[list-item]
    if op == "$in":
        return _scalars(key, list(arg), "")  # type: ignore[arg-type]
    if op == "$exists":
        return _rows(key, _TOP_TYPES) if arg else None
    if op in ("$match", "$imatch"):
        return _rows(key, ("text",))
    if op in COMPARISONS:
        wanted = ("text",) if isinstance(arg, str) else _NUMBERS
        checks.append(_rows(key, tuple(t for t in _TOP_TYPES if t not in wanted)))
        sql, params = _rows(key, wanted)
        return f"{sql} AND value {_RANGE[op]} ?", [*params, arg]
    if op in ("$contains", "$any", "$all"):
        checks.append(_rows(key, tuple(t for t in _TOP_TYPES if t != "array")))
        values: list[Scalar] = list(arg) if isinstance(arg, tuple) else [arg]
        if op != "$all":
            return _scalars(key, values, "[")
        if not values:
            return _rows(key, ("array",))
        return combine([_scalars(key, [v], "[") for v in values], "INTERSECT")
    return None  # $ne, $nin, $empty: satisfied by rows without the key


def _rows(key: str, types: tuple[str, ...]) -> Sql:
    """The entries under ``key`` of one of ``types``."""
    marks = ", ".join("?" * len(types))
    return f"SELECT key FROM {TABLE} WHERE name = ? AND type IN ({marks})", [key, *types]


def _scalars(key: str, values: list[Scalar], prefix: str) -> Sql:
    """The entries under ``key`` equal to one of ``values`` (``prefix`` ``'['``: array elements)."""
    parts: list[Sql] = []
    numbers = [v for v in values if is_number(v)]
    texts = [v for v in values if isinstance(v, str)]
    for typed, types in ((numbers, _NUMBERS), (texts, ("text",))):
        if typed:
            sql, params = _rows(key, tuple(prefix + t for t in types))
            listed = json.dumps(typed, ensure_ascii=False)
            among = f"{sql} AND value IN (SELECT value FROM json_each(?))"
            parts.append((among, [*params, listed]))
    for literal, name in ((None, "null"), (True, "true"), (False, "false")):
        if any(v is literal for v in values):
            parts.append(_rows(key, (prefix + name,)))
    if not parts:
        return f"SELECT key FROM {TABLE} WHERE 0", []
    return combine(parts, "UNION")


def combine(parts: list[Sql], operator: str) -> Sql:
    """``parts`` joined by a compound operator (each part a ``SELECT key``).

    At most :data:`MAX_TERMS` parts share one compound ``SELECT``; more are
    grouped into nested ones (a union of unions, an intersection of
    intersections: the same set).
    """
    if len(parts) == 1:
        return parts[0]
    if len(parts) > MAX_TERMS:
        starts = range(0, len(parts), MAX_TERMS)
        return combine([combine(parts[i : i + MAX_TERMS], operator) for i in starts], operator)
    sql = f" {operator} ".join(f"SELECT key FROM ({p})" for p, _ in parts)
    return sql, [v for _, params in parts for v in params]
