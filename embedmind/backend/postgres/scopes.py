r"""Namespace scopes in PostgreSQL: exact ``/`` segments, ``LIKE`` wildcards escaped.

A scope (:class:`embedmind.query.scope.Scope`) lists exact
namespaces (``"a/b"``) and subtrees (``"a/b/*"`` — ``a/b`` and everything under
``a/b/``, never the sibling ``a/bc``). A subtree compiles to ``ns = root OR ns
LIKE root || '/%'`` with ``\``, ``%`` and ``_`` in the root escaped: namespaces
may contain ``%`` and ``_``, and an unescaped ``a/b_c/%`` would match
``a/bxc/...`` — the way LangGraph's ``PostgresStore`` leaked sibling
namespaces. The ``namespace`` column is ``COLLATE "C"``, so the prefix ``LIKE``
can use the namespace index (and comparison is by code point, as in SQLite).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from embedmind.query.scope import SUBTREE_SUFFIX, Scope

LIKE_ESCAPE = "\\"
TIER_COLUMN = sql.SQL("m.tier")


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
    condition, params = _items(scope, column)
    for namespace, tiers in grants:
        condition = sql.SQL("({c} OR ({col} = %s AND {t} = ANY(%s::text[])))").format(
            c=condition, col=column, t=tier_column
        )
        params = [*params, namespace, list(tiers)]
    return condition, params


def _items(scope: Scope | None, column: sql.Composable) -> tuple[sql.Composed, list[Any]]:
    if scope is None:
        return sql.Composed([sql.SQL("TRUE")]), []
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
