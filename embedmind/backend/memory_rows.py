"""A stored memory row read back as a :class:`~embedmind.model.Memory`, or refused as damaged.

Both backends select the same columns (:data:`FIELDS`) and decode them here,
the one place a row becomes a memory: every value is checked as it is
decoded, so a value changed behind the engine's back (a flipped byte, an
``UPDATE`` by hand) reads as a :class:`~embedmind.errors.DamagedRecordError`
naming the memory and the field, on every read path (get, iter, recall,
lineage, related, export), never as a raw ``JSONDecodeError``, ``ValueError``
or ``OverflowError``, and never as a memory that quietly differs from what
was written: the content is checked against its fingerprint
(:func:`content_problem`), a confidence must lie in [0, 1] (NaN does not), a
time in the years 1-9999.

Each reason starts with the field's name (``"tier 'sematic' is not one of
..."``), as the content's did (``"content no longer matches its fingerprint"``).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from embedmind.backend.values import EXPORT_COLUMNS
from embedmind.drafts import _filled, fingerprint
from embedmind.errors import DamagedRecordError
from embedmind.model import Level, Memory, Tier
from embedmind.timestamps import from_micros

FIELDS = (*EXPORT_COLUMNS[: EXPORT_COLUMNS.index("fingerprint") + 1], "forgotten_at")
"""The columns a memory row holds, in the order both backends select them (an export
line's columns up to ``fingerprint``, then ``forgotten_at``)."""


class _Bad(Exception):
    """A value that does not decode; its message names the field and what is wrong."""


def content_problem(content: object, stored_fingerprint: object) -> str | None:
    """What is wrong with a row's content, or ``None`` when it matches its fingerprint.

    The fingerprint is the dedup hash of :func:`embedmind.drafts.fingerprint`,
    so the check costs one normalisation and one SHA-256 per row read.
    """
    if not isinstance(content, str):
        return "content is not valid UTF-8"
    if fingerprint(content) != stored_fingerprint:
        return "content no longer matches its fingerprint"
    return None


def _text(value: object, field: str) -> str:
    if type(value) is not str:
        raise _Bad(f"{field} is {type(value).__name__}, not text")
    return value


def _optional_text(value: object, field: str) -> str | None:
    return None if value is None else _text(value, field)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # json would read NaN and Infinity as floats


_JSON = json.JSONDecoder(parse_constant=_no_constant)
"""JSON as the engine writes it (``allow_nan=False``): NaN and infinities are damage."""


def _json(value: object, field: str) -> Any:
    try:
        return _JSON.decode(_text(value, field))
    except ValueError as e:  # json.JSONDecodeError, a constant, an integer too long to convert
        raise _Bad(f"{field} is not JSON ({e})") from None


def _metadata(value: object) -> dict[str, Any]:
    if value == "{}":  # most memories: skip the parser (an iter page holds 10,000)
        return {}
    decoded = _json(value, "metadata")
    if type(decoded) is not dict:
        raise _Bad(f"metadata is a JSON {type(decoded).__name__}, not an object")
    return decoded


def _tags(value: object) -> tuple[str, ...]:
    # SQLite stores a JSON array, PostgreSQL a text[] (the driver reads a list).
    tags = value if type(value) is list else [] if value == "[]" else _json(value, "tags")
    if type(tags) is not list or not all(type(tag) is str for tag in tags):
        raise _Bad("tags is not a list of strings")
    return tuple(tags)


_TIERS = {member.value: member for member in Tier}
_LEVELS = {member.value: member for member in Level}


def _member(value: object, members: dict[str, Any], field: str) -> Any:
    found = members.get(value) if type(value) is str else None
    if found is None:
        raise _Bad(f"{field} {value!r} is not one of {', '.join(members)}")
    return found


def _time(value: object, field: str) -> _dt.datetime:
    if type(value) is not int:
        raise _Bad(f"{field} {value!r} is not a time in microseconds")
    try:
        return from_micros(value)
    except OverflowError:
        raise _Bad(f"{field} {value} lies outside the years 1-9999") from None


def _optional_time(value: object, field: str) -> _dt.datetime | None:
    return None if value is None else _time(value, field)


def _confidence(value: object, field: str) -> float:
    # NaN fails both comparisons. The engine writes only floats in [0, 1].
    if type(value) is not float or not 0.0 <= value <= 1.0:
        raise _Bad(f"{field} {value!r} is not a number in [0, 1]")
    return value


def _optional_confidence(value: object, field: str) -> float | None:
    return None if value is None else _confidence(value, field)


def _count(value: object, field: str) -> int:
    if type(value) is not int or value < 0:
        raise _Bad(f"{field} {value!r} is not a count")
    return value


def _fields(row: Sequence[Any]) -> dict[str, Any]:
    """Every :class:`Memory` field of a row, each value checked as it is decoded."""
    return {
        "id": _text(row[1], "id"),
        "namespace": _text(row[2], "namespace"),
        "content": _text(row[3], "content"),
        "metadata": _metadata(row[4]),
        "tags": _tags(row[5]),
        "tier": _member(row[6], _TIERS, "tier"),
        "level": _member(row[7], _LEVELS, "level"),
        "agent": _text(row[8], "agent"),
        "session_id": _optional_text(row[9], "session_id"),
        "created_at": _time(row[10], "created_at"),
        "updated_at": _time(row[11], "updated_at"),
        "valid_from": _time(row[12], "valid_from"),
        "valid_to": _optional_time(row[13], "valid_to"),
        "expires_at": _optional_time(row[14], "expires_at"),
        "superseded_by": _optional_text(row[15], "superseded_by"),
        "confidence": _confidence(row[16], "confidence"),
        "access_count": _count(row[17], "access_count"),
        "last_accessed_at": _optional_time(row[18], "last_accessed_at"),
        "fingerprint": _text(row[19], "fingerprint"),
        "forgotten": row[20] is not None,
    }


def to_memory(row: Sequence[Any]) -> Memory:
    """Build a :class:`Memory` from a row selected in :data:`FIELDS` order.

    Raises:
        DamagedRecordError: Naming the memory and the first field that does
            not decode, or its content when it no longer matches its fingerprint.
    """
    try:
        fields = _fields(row)
    except _Bad as e:
        raise DamagedRecordError([_name(row)], str(e)) from None
    problem = content_problem(fields["content"], fields["fingerprint"])
    if problem is not None:
        raise DamagedRecordError([fields["id"]], problem)
    # As Memory(**fields), without a frozen dataclass's 21 setattr calls.
    return _filled(fields)


def to_memories(rows: Sequence[Sequence[Any]]) -> list[Memory]:
    """:func:`to_memory` of each row, refusing every damaged one among them at once.

    Raises:
        DamagedRecordError: Naming every damaged memory among the rows (with
            each one's reason when they differ).
    """
    return _each(rows, to_memory)


def export_items(rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Export lines' fields from rows selected in :data:`EXPORT_COLUMNS` order (times in µs).

    Each row is decoded as a memory first: an export never carries a damaged
    memory as if it were sound.

    Raises:
        DamagedRecordError: Naming every damaged memory among the rows.
    """
    return _each(rows, _export_item)


def export_problem(row: Sequence[Any]) -> str | None:
    """What is wrong with a row selected in :data:`EXPORT_COLUMNS` order, or ``None``."""
    try:
        _export_item(row)
    except DamagedRecordError as e:
        return e.reason
    return None


def _export_item(row: Sequence[Any]) -> dict[str, Any]:
    # forgotten_at is not an export column: a tombstone's fields decode as a live row's.
    memory = to_memory((*row[: len(FIELDS) - 1], None))
    item = dict(zip(EXPORT_COLUMNS, row, strict=True))
    try:
        _optional_text(item["contradicted_by"], "contradicted_by")
        _optional_confidence(item["prior_confidence"], "prior_confidence")
    except _Bad as e:
        raise DamagedRecordError([memory.id], str(e)) from None
    item["key"] = int(item["key"])
    item["metadata"] = memory.metadata
    item["tags"] = list(memory.tags)
    return item


_T = TypeVar("_T")


def _each(rows: Sequence[Sequence[Any]], decode: Callable[[Sequence[Any]], _T]) -> list[_T]:
    """``decode`` of each row; when one is damaged, one error naming every damaged row."""
    try:
        return [decode(row) for row in rows]
    except DamagedRecordError:
        found = []
        for row in rows:
            try:
                decode(row)
            except DamagedRecordError as e:
                found.append((_name(row), e.reason))
        reasons = {reason for _, reason in found}
        reason = reasons.pop() if len(reasons) == 1 else "; ".join(f"{i}: {r}" for i, r in found)
        raise DamagedRecordError([name for name, _ in found], reason) from None


def _name(row: Sequence[Any]) -> str:
    """The row's id, or ``"key:N"`` when even the id does not decode."""
    return row[1] if type(row[1]) is str else f"key:{row[0]}"
