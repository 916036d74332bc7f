"""Namespace scopes compiled to SQLite: exact names and subtree range scans, at any size.

A scope of at most :data:`~embedmind.query.scope.INLINE_ITEMS` items compiles to one
indexed test per item: ``ns = ?`` and, for a subtree, a range scan (``'a/b/' <= ns < 'a/b0'``,
``'0'`` being the code point after ``'/'``), so each uses the namespace index.

A longer list travels as one JSON parameter per kind. As tests per item it
broke SQLite's limits — the ``OR`` chain of 996 names was deeper than its
1,000-level expression limit, and the values could pass the 32,766 it binds —
and it was slow long before: listing the 50,000 memories of 1,000 named
namespaces (of 100,000 in 2,000) took 25 s so, 5 s as a list. The exact names
(and the subtree roots themselves) are ``ns IN (SELECT value FROM
json_each(?))``, still index lookups; the subtrees are found through ``ns``'s
ancestors — ``ns``, then each prefix before a ``/`` — looked up among the
roots, a few lookups per row however many roots the scope lists.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from embedmind.query.scope import INLINE_ITEMS, SUBTREE_SUFFIX, Scope, grants_by_tiers

_PARENT = "substr({p}, 1, length(rtrim({p}, replace({p}, '/', ''))) - 1)"
"""``{p}`` without its last segment (``rtrim`` strips the trailing non-``/`` characters)."""
_UNDER_ANY = (
    "EXISTS (WITH RECURSIVE scope_up(p) AS (SELECT {c} UNION ALL "
    f"SELECT {_PARENT.format(p='p')} FROM scope_up WHERE instr(p, '/') > 0) "
    "SELECT 1 FROM scope_up WHERE p IN (SELECT value FROM json_each(?)))"
)
"""True when ``{c}`` or one of its ancestors is among the JSON list of roots."""


def compile_scope(
    scope: Scope | None,
    column: str,
    grants: Sequence[tuple[str, Sequence[str]]] = (),
    tier_column: str = "m.tier",
) -> tuple[str, list[str]]:
    """Compile a scope (and the link grants widening it) into a condition over ``column``.

    Args:
        scope: The validated scope, or ``None`` for every namespace.
        column: The (trusted, engine-chosen) column expression to test.
        grants: Extra ``(namespace, tiers)`` readable through namespace links.
        tier_column: The tier column the grants test.

    Returns:
        The condition and its parameters; ``("1", [])`` for ``None``.
    """
    if scope is None:
        return "1", []
    if len(scope.items) <= INLINE_ITEMS:
        sql, params = _inline(scope, column)
    else:
        sql, params = _sets(scope, column)
    for tiers, namespaces in grants_by_tiers(grants).items():
        among, names = _among(column, list(namespaces))
        marks = ", ".join("?" * len(tiers))
        sql = f"({sql} OR ({among} AND {tier_column} IN ({marks})))"
        params = [*params, *names, *tiers]
    return sql, params


def _inline(scope: Scope, column: str) -> tuple[str, list[str]]:
    """One test per item, in the caller's order: the form the plan tests pin."""
    clauses: list[str] = []
    params: list[str] = []
    for item in scope.items:
        if item.endswith(SUBTREE_SUFFIX):
            root = item[: -len(SUBTREE_SUFFIX)]
            clauses.append(f"({column} = ? OR ({column} >= ? AND {column} < ?))")
            params += [root, root + "/", root + "0"]
        else:
            clauses.append(f"{column} = ?")
            params.append(item)
    return "(" + " OR ".join(clauses) + ")", params


def _sets(scope: Scope, column: str) -> tuple[str, list[str]]:
    """A long scope as two parameters: the names it admits exactly, the subtree roots."""
    roots = list(dict.fromkeys(scope.subtrees()))
    among, params = _in_json(column, list(dict.fromkeys([*scope.exact(), *roots])))
    if not roots:
        return among, params
    under = _UNDER_ANY.format(c=column)
    return f"({among} OR {under})", [*params, _json(roots)]


def _among(column: str, names: Sequence[str]) -> tuple[str, list[str]]:
    """``column`` equal to one of ``names``, one parameter each or one JSON list past the limit."""
    if len(names) == 1:
        return f"{column} = ?", [names[0]]
    if len(names) <= INLINE_ITEMS:
        return f"{column} IN ({', '.join('?' * len(names))})", list(names)
    return _in_json(column, names)


def _in_json(column: str, names: Sequence[str]) -> tuple[str, list[str]]:
    """``column`` equal to one of ``names``, bound as one JSON list (an index lookup each)."""
    return f"{column} IN (SELECT value FROM json_each(?))", [_json(names)]


def _json(names: Sequence[str]) -> str:
    return json.dumps(list(names), ensure_ascii=False)
