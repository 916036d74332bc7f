"""Relations and namespace links read back as values, or refused as damaged.

The graph's counterpart of :mod:`embedmind.backend.memory_rows`, with its
checks: both backends pass the relation times and link rows they read through
here, so a value changed behind the engine's back (an ``UPDATE`` by hand, a
flipped byte) reads as a :class:`~embedmind.errors.DamagedRecordError` naming
what it belongs to and the field, never as a raw ``JSONDecodeError``,
``ValueError`` or ``OverflowError``, nor as an export line its own import
refuses. A relation belongs to the memory it leaves (an upsert of that memory
rewrites it); a link is named by its two namespaces.

Text that is not UTF-8 is SQLite's alone (PostgreSQL refuses it on write):
its row modules trace it and name it the same way (``"relations: a kind is
not valid UTF-8"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from embedmind.backend.memory_rows import _TIERS, _Bad, _json, _member, _text, _time
from embedmind.backend.values import Link
from embedmind.errors import DamagedRecordError

ENTITY_NOT_UTF8 = "entities: a name is not valid UTF-8"
KIND_NOT_UTF8 = "relations: a kind is not valid UTF-8"
ID_NOT_UTF8 = "id is not valid UTF-8"


def relations(
    rows: Sequence[Sequence[Any]], owner: Callable[[], str]
) -> list[tuple[str, str, int]]:
    """``(kind, target id, created_at)`` of one memory's relations, each time checked.

    Args:
        rows: The relations as read.
        owner: The id of the memory they leave (asked only when one is damaged).

    Raises:
        DamagedRecordError: Naming the memory, when a relation's ``created_at``
            lies outside the years 1-9999 (its export line would be refused
            by the import).
    """
    for _, _, created in rows:
        try:
            _time(created, "created_at")
        except _Bad as e:
            raise DamagedRecordError([owner()], f"relations: {e}") from None
    return [(str(k), str(t), int(c)) for k, t, c in rows]


def to_link(row: Sequence[Any]) -> Link:
    """A :class:`Link` from a ``(src, dst, tiers, note, created_at)`` row.

    ``tiers`` is JSON text (SQLite) or a list (PostgreSQL's ``text[]``), or
    ``None``; a text value may be bytes, read byte-wise because it may not be
    UTF-8.

    Raises:
        DamagedRecordError: Naming the link (``link``) and its first column
            that does not decode.
    """
    src, dst, tiers, note, created = row
    try:
        return Link(
            _link_text(src, "src"),
            _link_text(dst, "dst"),
            _tiers(tiers),
            _link_text(note, "note"),
            _micros(created, "created_at"),
        )
    except _Bad as e:
        raise DamagedRecordError([], str(e), link=(_shown(src), _shown(dst))) from None


def _link_text(value: object, field: str) -> str:
    if type(value) is bytes:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad(f"{field} is not valid UTF-8") from None
    return _text(value, field)


def _tiers(value: object) -> tuple[str, ...] | None:
    if value is None:  # the engine's "durable tiers" default
        return None
    tiers = value if type(value) is list else _json(_link_text(value, "tiers"), "tiers")
    if type(tiers) is not list:
        raise _Bad(f"tiers is a JSON {type(tiers).__name__}, not a list")
    return tuple(_member(tier, _TIERS, "tiers").value for tier in tiers)


def _micros(value: object, field: str) -> int:
    _time(value, field)
    return value  # type: ignore[return-value]  # _time checked it is an int


def _shown(value: object) -> str:
    """A link's namespace as the error shows it, even when it is not UTF-8."""
    if type(value) is bytes:
        return value.decode("utf-8", "replace")
    return value if type(value) is str else repr(value)
