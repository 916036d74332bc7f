"""Which namespaces a vector store reads, and the one it writes.

Reads take a scope as :meth:`embedmind.Store.recall` does (``"a/b"``,
``"a/b/*"`` for a subtree, or a list of those); writes need one namespace.
"""

from __future__ import annotations

from collections.abc import Sequence

from embedmind import InvalidInputError, Store
from embedmind.query.scope import SUBTREE_SUFFIX, in_scope, normalize_namespace

Scope = str | list[str]


def read_scope(namespace: str | Sequence[str]) -> Scope:
    """Validate a read scope and return it NFC-normalised (as the stored namespaces are).

    Raises:
        InvalidInputError: When an item is not a valid namespace or subtree pattern.
    """
    if isinstance(namespace, str):
        return _item(namespace, "namespace")
    if not isinstance(namespace, Sequence) or not namespace:
        raise InvalidInputError("namespace", "expected a namespace, 'a/b/*' or a non-empty list")
    return [_item(item, f"namespace[{i}]") for i, item in enumerate(namespace)]


def write_target(scope: Scope, write_namespace: str | None) -> str | None:
    """The namespace writes go to: ``write_namespace``, else the scope when it names one.

    Returns:
        ``None`` when the scope is a pattern or a list and no ``write_namespace``
        was given; writes then refuse with the line to write.

    Raises:
        InvalidInputError: When ``write_namespace`` lies outside the read scope
            (documents written there could not be read back).
    """
    if write_namespace is None:
        single = isinstance(scope, str) and not scope.endswith(SUBTREE_SUFFIX)
        return scope if single and isinstance(scope, str) else None
    target = normalize_namespace(write_namespace, "write_namespace")
    if not in_scope(target, scope):
        raise InvalidInputError(
            "write_namespace",
            f"{target!r} lies outside the read scope {scope!r}, so what is written there "
            "could not be found again; pick a namespace inside it",
        )
    return target


def namespaces(store: Store, scope: Scope) -> list[str]:
    """The namespaces a read scope can find documents in.

    Its exact names, and for a subtree the namespaces under it that hold
    memories (listed once, only when the scope has a subtree).
    """
    items = [scope] if isinstance(scope, str) else scope
    exact = [item for item in items if not item.endswith(SUBTREE_SUFFIX)]
    if len(exact) == len(items):
        return exact
    held = [activity.namespace for activity in store.namespaces()]
    return list(dict.fromkeys([*exact, *(n for n in held if in_scope(n, scope))]))


def covers(scope: Scope, namespace: str) -> bool:
    """Tell whether a memory's namespace lies in the read scope."""
    return in_scope(namespace, scope)


def _item(item: object, field: str) -> str:
    if isinstance(item, str) and item.endswith(SUBTREE_SUFFIX):
        return normalize_namespace(item[: -len(SUBTREE_SUFFIX)], field) + SUBTREE_SUFFIX
    return normalize_namespace(item, field)
