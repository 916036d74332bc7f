"""A :class:`~embedmind.query.Selection` compiled to one parameterised SQLite condition.

Every read path of the SQLite backend — text recall, vector recall, pages,
counts — applies the same compiled condition, so a memory is visible through
one path exactly when it is visible through all of them.
"""

from __future__ import annotations

from typing import Any

from embedmind.backend.sqlite.metadata_index import combine, compile_probe
from embedmind.backend.sqlite.scope_sql import compile_scope
from embedmind.backend.sqlite.where_sql import compile_where
from embedmind.query.selection import Selection

Condition = tuple[str, list[Any]]
"""A SQL condition over ``memories`` and its parameters."""


def compile_selection(selection: Selection, alias: str = "m") -> Condition:
    """Compile to ``(condition, params)`` over the memories table aliased ``alias``."""
    base, params = _base(selection, alias)
    compiled = compile_where(selection.where, f"{alias}.metadata")
    if compiled is None:
        return base, params
    # The CASE order is the contract: rows outside the base selection are
    # never type-checked, and every row inside it is checked before its
    # match is decided, so FilterTypeError does not depend on the plan.
    sql = (
        f"{base} AND (CASE WHEN NOT {base} THEN 0 WHEN {compiled.check} THEN 0 "
        f"ELSE {compiled.match} END)"
    )
    return sql, [*params, *params, *compiled.check_params, *compiled.match_params]


def compile_candidates(selection: Selection) -> Condition | None:
    """A query of memory keys, read from indexes, that holds every memory ``selection`` admits.

    Built from the metadata index (:func:`~embedmind.backend.sqlite.metadata_index.compile_probe`)
    and the tag index; ``None`` when neither bounds the selection. The keys are
    candidates only: a read narrowed to them still applies :func:`compile_selection`.
    """
    parts = [("SELECT key FROM memory_tags WHERE tag = ?", [tag]) for tag in selection.tags]
    probe = compile_probe(selection.where)
    if probe is not None:
        parts.append(probe)
    return combine(parts, "INTERSECT") if parts else None


def _base(s: Selection, m: str) -> Condition:
    clauses: list[str] = []
    params: list[Any] = []
    if not s.include_forgotten:
        clauses.append(f"{m}.forgotten_at IS NULL")
    if not s.include_expired:
        clauses.append(f"({m}.expires_at IS NULL OR {m}.expires_at > ?)")
        params.append(s.now)
    if s.as_of is not None:
        clauses.append(f"{m}.valid_from <= ? AND ({m}.valid_to IS NULL OR {m}.valid_to > ?)")
        params += [s.as_of, s.as_of]
    elif not s.include_superseded:
        clauses.append(f"{m}.superseded_by IS NULL")
        clauses.append(f"({m}.valid_to IS NULL OR {m}.valid_to > ?)")
        params.append(s.now)
    scope_sql, scope_params = compile_scope(s.scope, f"{m}.namespace", s.grants, f"{m}.tier")
    clauses.append(scope_sql)
    params += scope_params
    if s.agent is not None:
        clauses.append(f"{m}.agent = ?")
        params.append(s.agent)
    if s.session_id is not None:
        clauses.append(f"{m}.session_id = ?")
        params.append(s.session_id)
    for tag in s.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = ? AND t.key = {m}.key)")
        params.append(tag)
    for column, values in (("tier", s.tiers), ("level", s.levels)):
        if values:
            clauses.append(f"{m}.{column} IN ({', '.join('?' * len(values))})")
            params += list(values)
    return "(" + " AND ".join(clauses) + ")", params
