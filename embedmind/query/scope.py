"""Namespaces: ``/``-separated segments with exact segment matching.

A namespace names a memory's home (``"user/alice/project-x"``). A read covers a
*scope*: one namespace exactly (``"a/b"``), a subtree (``"a/b/*"`` — ``a/b`` and
everything below it, never ``a/bc``), a list of those, or everything (``None``).
A :class:`Scope` is that choice parsed and validated once; each backend
compiles it (the SQLite one, :mod:`embedmind.backend.sqlite.scope_sql`, as a
range scan of the namespace index) and :func:`in_scope` is its Python twin.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from embedmind.errors import InvalidInputError

MAX_NAMESPACE_CHARS = 256
SUBTREE_SUFFIX = "/*"
_FORBIDDEN_SEGMENTS = {".", ".."}


@dataclass(frozen=True)
class Scope:
    """A validated namespace scope: exact namespaces and subtree roots, in the caller's order.

    Attributes:
        items: The NFC items, a subtree kept as ``"root/*"`` (never empty).
    """

    items: tuple[str, ...]

    @classmethod
    def of(cls, scope: object, field: str = "namespace") -> Scope | None:
        """Parse a caller's scope (``None``: every namespace).

        Raises:
            InvalidInputError: When the scope is malformed (see :func:`normalize_scope`).
        """
        items = normalize_scope(scope, field)
        return None if items is None else cls(items)

    def exact(self) -> tuple[str, ...]:
        """The namespaces named exactly."""
        return tuple(i for i in self.items if not i.endswith(SUBTREE_SUFFIX))

    def subtrees(self) -> tuple[str, ...]:
        """The roots of the subtrees named (``"a/b"`` for ``"a/b/*"``)."""
        return tuple(i[: -len(SUBTREE_SUFFIX)] for i in self.items if i.endswith(SUBTREE_SUFFIX))


def normalize_namespace(value: object, field: str = "namespace") -> str:
    """Validate a namespace and return it in Unicode NFC form.

    Args:
        value: The namespace given by the caller.
        field: The argument name, for the error message.

    Returns:
        The NFC-normalised namespace.

    Raises:
        InvalidInputError: When the namespace is not a string, is empty, is too
            long, contains NUL, control characters or ``*``, or has an empty,
            ``.`` or ``..`` segment.
    """
    if type(value) is str:
        # A bulk load names a handful of namespaces 10,000 times a batch.
        return _checked_str(value, field)
    return _checked(value, field)


@functools.lru_cache(maxsize=1024)
def _checked_str(value: str, field: str) -> str:
    """:func:`_checked` of a plain str, remembered (an error is raised anew each time)."""
    return _checked(value, field)


def _checked(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(field, f"expected a str, got {type(value).__name__}")
    text = unicodedata.normalize("NFC", value)
    if not text:
        raise InvalidInputError(field, "must not be empty")
    if len(text) > MAX_NAMESPACE_CHARS:
        raise InvalidInputError(field, f"longer than {MAX_NAMESPACE_CHARS} characters")
    # Controls and surrogates are unprintable: most names skip the per-character look-up.
    if not text.isprintable() and any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        raise InvalidInputError(field, "contains NUL, control or surrogate characters")
    if "*" in text:
        raise InvalidInputError(field, "'*' is reserved for subtree scopes like 'a/b/*'")
    for segment in text.split("/"):
        if not segment.strip():
            raise InvalidInputError(field, f"{value!r} has an empty segment")
        if segment in _FORBIDDEN_SEGMENTS:
            raise InvalidInputError(field, f"segment {segment!r} is not allowed")
    return text


def scope_items(scope: object, field: str = "namespace") -> list[object]:
    """The namespaces (or subtree patterns) a non-``None`` scope lists.

    Raises:
        InvalidInputError: When the scope is neither a str nor a list, tuple or set
            (``list(5)`` would be a raw TypeError, ``list({"a": 1})`` its keys).
    """
    if isinstance(scope, str):
        return [scope]
    if isinstance(scope, Sequence | AbstractSet) and not isinstance(scope, bytes | bytearray):
        return list(scope)
    raise InvalidInputError(
        field, f"expected a str, a list of str or None, got {type(scope).__name__}"
    )


def normalize_scope(scope: object, field: str = "namespace") -> tuple[str, ...] | None:
    """Validate a scope and return its items in NFC, subtree patterns kept as ``root/*``.

    Args:
        scope: ``"a/b"``, ``"a/b/*"``, a sequence of those, or ``None`` for all.
        field: The argument name, for the error message.

    Returns:
        The normalised items, or ``None`` for all namespaces.

    Raises:
        InvalidInputError: When the scope is an empty list or a namespace in it
            is invalid.
    """
    if scope is None:
        return None
    items = scope_items(scope, field)
    if not items:
        raise InvalidInputError(field, "an empty list matches nothing; pass None for all")
    normal = []
    for item in items:
        if isinstance(item, str) and item.endswith(SUBTREE_SUFFIX):
            root = normalize_namespace(item[: -len(SUBTREE_SUFFIX)], field)
            normal.append(root + SUBTREE_SUFFIX)
        else:
            normal.append(normalize_namespace(item, field))
    return tuple(normal)


def in_scope(namespace: str, scope: str | Sequence[str] | None) -> bool:
    """Tell whether ``namespace`` lies in ``scope`` (the Python twin of a backend's scope test).

    Both are compared as given: pass them through :func:`normalize_namespace`
    and :func:`normalize_scope` first (an NFD spelling matches no stored
    namespace, which are NFC).
    """
    if scope is None:
        return True
    items = [scope] if isinstance(scope, str) else list(scope)
    for item in items:
        if item.endswith(SUBTREE_SUFFIX):
            root = item[: -len(SUBTREE_SUFFIX)]
            if namespace == root or namespace.startswith(root + "/"):
                return True
        elif namespace == item:
            return True
    return False


INLINE_ITEMS = 64
"""Scope items up to which both backends compile one indexed test per item.

Past it a scope is bound as one JSON parameter (SQLite ``json_each``,
PostgreSQL ``jsonb ?``): SQLite's expression depth (1,000) and PostgreSQL's
65,535 parameters bound the inline form, and on 100,000 memories in 2,000
namespaces the set form was as fast or faster from 64 items up."""


def grants_by_tiers(
    grants: Sequence[tuple[str, Sequence[str]]],
) -> dict[tuple[str, ...], dict[str, None]]:
    """The granted namespaces grouped by their tiers: one test per group, however many links.

    Both backends compile a ``follow_links`` scope this way, so a scope of a
    thousand links is a handful of conditions, not a thousand.
    """
    groups: dict[tuple[str, ...], dict[str, None]] = {}
    for namespace, tiers in grants:
        groups.setdefault(tuple(tiers), {})[namespace] = None
    return groups
