r"""Namespace scopes in PostgreSQL: exact ``/`` segments, ``LIKE`` wildcards escaped.

A scope is what :func:`embedmind.namespaces.normalize_scope` returns: exact
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

from psycopg import sql

from embedmind.namespaces import SUBTREE_SUFFIX, normalize_scope

LIKE_ESCAPE = "\\"


def escape_like(text: str) -> str:
    r"""Escape ``LIKE``'s wildcards and its escape character (``\``) in ``text``."""
    return (
        text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


def compile_scope(
    scope: str | Sequence[str] | None, column: sql.Composable
) -> tuple[sql.Composed, list[str]]:
    """A condition over ``column`` true for namespaces in ``scope`` (``TRUE`` for ``None``).

    Every namespace is a bound parameter (``%s``); ``column`` is engine-chosen.

    Returns:
        The condition and its parameters, in order.

    Raises:
        InvalidInputError: When a namespace in the scope is invalid.
    """
    items = normalize_scope(scope)
    if items is None:
        return sql.Composed([sql.SQL("TRUE")]), []
    clauses: list[sql.Composable] = []
    params: list[str] = []
    for item in items:
        if item.endswith(SUBTREE_SUFFIX):
            root = item[: -len(SUBTREE_SUFFIX)]
            clauses.append(sql.SQL("({c} = %s OR {c} LIKE %s ESCAPE '\\')").format(c=column))
            params += [root, escape_like(root) + "/%"]
        else:
            clauses.append(sql.SQL("{c} = %s").format(c=column))
            params.append(item)
    return sql.SQL("({})").format(sql.SQL(" OR ").join(clauses)), params
