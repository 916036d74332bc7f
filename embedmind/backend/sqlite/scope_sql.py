"""Namespace scopes compiled to SQLite: exact names and subtree range scans.

The subtree test is a range scan (``'a/b/' <= ns < 'a/b0'``, ``'0'`` being the
code point after ``'/'``), so it uses the namespace index.
"""

from __future__ import annotations

from collections.abc import Sequence

from embedmind.query.scope import SUBTREE_SUFFIX, Scope


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
        The condition and its parameters; ``("1", [])`` for ``None`` without grants.
    """
    sql, params = _items(scope, column)
    for namespace, tiers in grants:
        marks = ", ".join("?" * len(tiers))
        sql = f"({sql} OR ({column} = ? AND {tier_column} IN ({marks})))"
        params = [*params, namespace, *tiers]
    return sql, params


def _items(scope: Scope | None, column: str) -> tuple[str, list[str]]:
    if scope is None:
        return "1", []
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
