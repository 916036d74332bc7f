r"""Namespace scopes in PostgreSQL: exact ``/`` segments, ``LIKE`` wildcards escaped.

A scope (:class:`embedmind.query.scope.Scope`) lists exact
namespaces (``"a/b"``) and subtrees (``"a/b/*"`` — ``a/b`` and everything under
``a/b/``, never the sibling ``a/bc``). A subtree compiles to ``ns = root OR ns
LIKE root || '/%'`` with ``\``, ``%`` and ``_`` in the root escaped: namespaces
may contain ``%`` and ``_``, and an unescaped ``a/b_c/%`` would match
``a/bxc/...`` — the way LangGraph's ``PostgresStore`` leaked sibling
namespaces. The ``namespace`` column is ``COLLATE "C"``, so the prefix ``LIKE``
can use the namespace index (and comparison is by code point, as in SQLite).

A scope of more than :data:`~embedmind.query.scope.INLINE_ITEMS` items would bind a parameter or two
per item, and PostgreSQL binds at most 65,535 (70,000 names failed). It travels
as two ``jsonb`` objects instead, keyed by the names the scope admits exactly
(the subtree roots among them) and by the roots, and ``?`` looks a key up by
binary search: ``ns`` itself in the first, each of its proper ancestors (the
prefixes before a ``/``) in the second. That costs a few lookups per row
whatever the scope's length, under custom and generic plans alike. A long
``ns = ANY(array)`` did not: on 40,000 memories in 2,000 namespaces,
PostgreSQL 18 probed the namespace index with the whole array once per
candidate of a text recall (2 s for a scope of 2,000 names, 15 s for 20,000;
0.2 s and 0.1 s with the lookups), and a prepared statement's generic plan
compared the roots one by one (40 s for 70,000 roots over 20,000 rows, 0.1 s).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from psycopg import sql

from embedmind.query.scope import INLINE_ITEMS, SUBTREE_SUFFIX, Scope, grants_by_tiers

LIKE_ESCAPE = "\\"
TIER_COLUMN = sql.SQL("m.tier")
_UNDER_ANY = (
    "EXISTS (SELECT 1 FROM generate_series(1, cardinality(string_to_array({c}, '/')) - 1) AS d "
    "WHERE %s::jsonb ? array_to_string((string_to_array({c}, '/'))[1:d], '/'))"
)
"""True when a proper ancestor of ``{c}`` is a key of the roots (segments are never empty)."""


def escape_like(text: str) -> str:
    r"""Escape ``LIKE``'s wildcards and its escape character (``\``) in ``text``."""
    return (
        text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


def compile_scope(
    scope: Scope | str | Sequence[str] | None,
    column: sql.Composable,
    grants: Sequence[tuple[str, Sequence[str]]] = (),
    tier_column: sql.Composable = TIER_COLUMN,
) -> tuple[sql.Composed, list[Any]]:
    """A condition over ``column`` true for namespaces in ``scope`` (``TRUE`` for ``None``).

    Every namespace is a bound parameter (``%s``); ``column`` is engine-chosen.

    Args:
        scope: The validated scope (a raw one is validated here), or ``None``.
        column: The namespace column expression.
        grants: Extra ``(namespace, tiers)`` readable through namespace links.
        tier_column: The tier column the grants test.

    Returns:
        The condition and its parameters, in order.

    Raises:
        InvalidInputError: When a raw scope is invalid.
    """
    if scope is not None and not isinstance(scope, Scope):
        scope = Scope.of(scope)
    if scope is None:
        return sql.Composed([sql.SQL("TRUE")]), []
    condition, params = (_inline if len(scope.items) <= INLINE_ITEMS else _sets)(scope, column)
    for tiers, namespaces in grants_by_tiers(grants).items():
        among, names = _among(column, list(namespaces))
        condition = sql.SQL("({c} OR ({a} AND {t} = ANY(%s::text[])))").format(
            c=condition, a=among, t=tier_column
        )
        params = [*params, *names, list(tiers)]
    return condition, params


def _inline(scope: Scope, column: sql.Composable) -> tuple[sql.Composed, list[Any]]:
    """One test per item, in the caller's order."""
    clauses: list[sql.Composable] = []
    params: list[Any] = []
    for item in scope.items:
        if item.endswith(SUBTREE_SUFFIX):
            root = item[: -len(SUBTREE_SUFFIX)]
            clauses.append(sql.SQL("({c} = %s OR {c} LIKE %s ESCAPE '\\')").format(c=column))
            params += [root, escape_like(root) + "/%"]
        else:
            clauses.append(sql.SQL("{c} = %s").format(c=column))
            params.append(item)
    return sql.SQL("({})").format(sql.SQL(" OR ").join(clauses)), params


def _sets(scope: Scope, column: sql.Composable) -> tuple[sql.Composed, list[Any]]:
    """A long scope as two parameters: the names it admits exactly, the subtree roots."""
    roots = list(dict.fromkeys(scope.subtrees()))
    among, params = _in_keys(column, list(dict.fromkeys([*scope.exact(), *roots])))
    if not roots:
        return sql.SQL("({})").format(among), params
    under = sql.SQL(_UNDER_ANY).format(c=column)
    return sql.SQL("({} OR {})").format(among, under), [*params, _keys(roots)]


def _among(column: sql.Composable, names: list[str]) -> tuple[sql.Composed, list[Any]]:
    """``column`` equal to one of ``names``: one parameter, an array, past the limit an object."""
    if len(names) == 1:
        return sql.SQL("{} = %s").format(column), names
    if len(names) <= INLINE_ITEMS:
        return sql.SQL("{} = ANY(%s::text[])").format(column), [names]
    return _in_keys(column, names)


def _in_keys(column: sql.Composable, names: list[str]) -> tuple[sql.Composed, list[Any]]:
    """``column`` among the keys of one ``jsonb`` object of ``names`` (a binary search)."""
    return sql.SQL("%s::jsonb ? {}").format(column), [_keys(names)]


def _keys(names: list[str]) -> str:
    """A JSON object keyed by ``names``, for ``?`` lookups."""
    return json.dumps(dict.fromkeys(names, 0), ensure_ascii=False)
