"""A :class:`~embedmind.query.Selection` compiled to one parameterised PostgreSQL condition.

Every read path of the PostgreSQL backend — text and vector recall, pages,
counts — applies this one condition over the memories table (alias ``m``), so
a memory is visible through one path exactly when it is visible through all.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from embedmind.backend.postgres.scopes import compile_scope
from embedmind.backend.postgres.where_sql import compile_where
from embedmind.query.selection import Selection

Condition = tuple[sql.Composable, list[Any]]
"""A SQL condition over ``memories m`` and its parameters (``%s`` placeholders)."""


def compile_selection(selection: Selection) -> Condition:
    """Compile to ``(condition, params)`` over the memories table aliased ``m``."""
    base, params = _base(selection)
    compiled = compile_where(selection.where, sql.SQL("m.metadata"))
    if compiled is None:
        return base, params
    if not compiled.check_params:
        # No operator can raise a type error (equalities, $in, $exists, ...): the plain
        # conjunction means the same, and the planner sees through it — it estimates the
        # admitted rows from the column statistics and serves ``metadata @> ...`` from the
        # GIN index, where the CASE below looks opaque (half the rows) and scans them all.
        return sql.SQL("({b} AND {w})").format(b=base, w=compiled.match), [
            *params, *compiled.match_params,
        ]  # fmt: skip
    # As in SQLite: rows outside the base selection are never type-checked,
    # and every row inside it is checked before its match is decided, so
    # FilterTypeError does not depend on the plan.
    condition = sql.SQL(
        "({b} AND (CASE WHEN NOT {b} THEN false WHEN {c} THEN false ELSE {w} END))"
    ).format(b=base, c=compiled.check, w=compiled.match)
    return condition, [
        *params, *params, *compiled.check_params, *compiled.match_params,
    ]  # fmt: skip


def _base(s: Selection) -> Condition:
    clauses: list[sql.Composable] = []
    params: list[Any] = []
    if not s.include_forgotten:
        clauses.append(sql.SQL("m.forgotten_at IS NULL"))
    if not s.include_expired:
        clauses.append(sql.SQL("(m.expires_at IS NULL OR m.expires_at > %s)"))
        params.append(s.now)
    if s.as_of is not None:
        clauses.append(sql.SQL("m.valid_from <= %s AND (m.valid_to IS NULL OR m.valid_to > %s)"))
        params += [s.as_of, s.as_of]
    elif not s.include_superseded:
        clauses.append(sql.SQL("m.superseded_by IS NULL"))
        clauses.append(sql.SQL("(m.valid_to IS NULL OR m.valid_to > %s)"))
        params.append(s.now)
    scope, scope_params = compile_scope(s.scope, sql.SQL("m.namespace"), s.grants)
    clauses.append(scope)
    params += scope_params
    if s.agent is not None:
        clauses.append(sql.SQL("m.agent = %s"))
        params.append(s.agent)
    if s.session_id is not None:
        clauses.append(sql.SQL("m.session_id = %s"))
        params.append(s.session_id)
    if s.tags:
        clauses.append(sql.SQL("m.tags @> %s::text[]"))  # every tag; the GIN index serves it
        params.append(list(s.tags))
    for column, values in (("tier", s.tiers), ("level", s.levels)):
        if values:
            clauses.append(sql.SQL("m.{} = ANY(%s::text[])").format(sql.Identifier(column)))
            params.append(list(values))
    return sql.SQL("({})").format(sql.SQL(" AND ").join(clauses)), params
