"""Parsing and validating the lines of an ``embedmind-jsonl`` export, one object at a time."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as _dt
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from embedmind import timestamps
from embedmind.backend.values import EXPORT_COLUMNS
from embedmind.checks import is_int, no_surrogates
from embedmind.drafts import Prepared, confidence_value, prepare
from embedmind.embedders.adapt import normalized
from embedmind.errors import InvalidInputError
from embedmind.ids import validate_id
from embedmind.model import Draft, Tier
from embedmind.query.scope import normalize_namespace
from embedmind.vectors.embedding import Embedded

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]
Lines = Iterator[tuple[int, str]]
"""Non-blank lines of an import source with their 1-based line numbers."""

HEADER_FIELDS = frozenset({"type", "format", "version", "embedder", "session_context"})
MEMORY_REQUIRED = (
    "id", "namespace", "content", "tier", "level", "created_at", "updated_at", "valid_from",
    "confidence",
)  # fmt: skip
MEMORY_FIELDS = frozenset({"type", "vectors", "entities", "relations", *EXPORT_COLUMNS} - {"key"})
LINK_FIELDS = frozenset({"type", "src", "dst", "tiers", "note", "created_at"})
VECTOR_FIELDS = frozenset({"start", "end", "f32le"})
TIERS = tuple(t.value for t in Tier)
"""A tuple, not a set: ``in`` must compare a JSON list or object, not hash it."""
_INT64_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Record:
    """One validated memory line: what ``apply_batch`` writes, and what an import adds."""

    prepared: Prepared
    restored: dict[str, Any]
    relations: tuple[tuple[str, str, int], ...]
    vectors: Embedded | None


Link = tuple[str, str, list[str] | None, str, int]
Relation = tuple[str, str, str, int]


@contextmanager
def at(number: int) -> Iterator[None]:
    """Prefix the field of an :class:`InvalidInputError` raised inside with the line number."""
    try:
        yield
    except InvalidInputError as e:
        raise InvalidInputError(f"line {number}: {e.field}", message(e)) from None


def message(error: InvalidInputError) -> str:
    return str(error).removeprefix(f"{error.field}: ")


def parse(number: int, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(
            f"line {number}", f"not JSON: {e.msg} at column {e.colno}"
        ) from None
    except (ValueError, RecursionError) as e:  # a 5,000-digit number, nesting too deep
        raise InvalidInputError(f"line {number}", f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"line {number}", f"expected a JSON object, got {type(value).__name__}"
        )
    return value


def objects(lines: Lines) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines after the header, parsed; each is a memory, a link or an alias."""
    for number, text in lines:
        item = parse(number, text)
        if item.get("type") not in ("memory", "link", "alias"):
            raise InvalidInputError(
                f"line {number}: type",
                f"expected 'memory', 'link' or 'alias', got {item.get('type')!r}",
            )
        yield number, item


def parsed_record(number: int, item: dict[str, Any], dims: int | None) -> Record:
    with at(number):
        return parsed_memory(item, dims)


def parsed_memory(item: dict[str, Any], dims: int | None) -> Record:
    """Validate a memory line through :func:`embedmind.drafts.prepare`, as ``remember`` does.

    Args:
        item: The parsed line.
        dims: The store's vector length when the file's vectors are reused,
            else ``None`` (they are then not read at all).

    Raises:
        InvalidInputError: Naming the first invalid field.
    """
    known(item, MEMORY_FIELDS, "memory")
    for name in MEMORY_REQUIRED:
        if name not in item:
            raise InvalidInputError(name, "missing")
    if item["id"] is None:  # a Draft without an id would get a fresh one
        raise InvalidInputError("id", "expected a str, got null")
    fingerprint = item.get("fingerprint")
    if fingerprint is not None and not isinstance(fingerprint, str):
        raise InvalidInputError("fingerprint", "expected a str")
    relations = parsed_relations(item.get("relations", []), item["id"])
    draft = Draft(
        content=item["content"],
        id=item["id"],
        namespace=item["namespace"],
        metadata=item.get("metadata"),
        tags=item.get("tags", ()),
        tier=item["tier"],
        level=item["level"],
        agent=item.get("agent", ""),
        session_id=item.get("session_id"),
        created_at=instant(item["created_at"], "created_at"),
        valid_from=instant(item["valid_from"], "valid_from"),
        expires_at=optional_instant(item.get("expires_at"), "expires_at"),
        confidence=item["confidence"],
        entities=item.get("entities", ()),
        relations=[(kind, target) for kind, target, _ in relations],
    )
    # valid_to is restored afterwards, not given to prepare: a superseded or
    # contradicted memory may legitimately end before it began. The fingerprint
    # is derived data, computed again by prepare. Relations are added by the
    # import itself, with their created_at, once their targets are in.
    prepared = prepare(draft, now=micros(item["updated_at"], "updated_at"))._replace(relations=())
    restored = {
        "updated_at": prepared.updated_at,
        "valid_to": optional_micros(item.get("valid_to"), "valid_to"),
        "superseded_by": optional_id(item.get("superseded_by"), "superseded_by"),
        "contradicted_by": optional_id(item.get("contradicted_by"), "contradicted_by"),
        "access_count": a_count(item.get("access_count", 0), "access_count"),
        "last_accessed_at": optional_micros(item.get("last_accessed_at"), "last_accessed_at"),
        "prior_confidence": optional_confidence(item.get("prior_confidence")),
    }
    given = None if dims is None else parsed_vectors(item.get("vectors"), prepared.content, dims)
    return Record(prepared, restored, relations, given)


def known(item: dict[str, Any], fields: frozenset[str], what: str) -> None:
    # A misspelt field would otherwise be dropped without a word.
    for name in item:
        if name not in fields:
            shown = name if len(name) <= 64 else name[:64] + "..."
            raise InvalidInputError(shown, f"not a field of a {what} line")


def micros(value: object, field: str) -> int:
    if not is_int(value):
        raise InvalidInputError(field, "expected integer microseconds since the Unix epoch")
    return timestamps.in_range(value, field)


def optional_micros(value: object, field: str) -> int | None:
    return None if value is None else micros(value, field)


def instant(value: object, field: str) -> _dt.datetime:
    return timestamps.from_micros(micros(value, field))


def optional_instant(value: object, field: str) -> _dt.datetime | None:
    return None if value is None else instant(value, field)


def optional_id(value: object, field: str) -> str | None:
    return None if value is None else validate_id(value, field)


def a_count(value: object, field: str) -> int:
    if not is_int(value) or not 0 <= value <= _INT64_MAX:
        raise InvalidInputError(field, "expected an integer >= 0 (64-bit)")
    return value


def optional_confidence(value: object) -> float | None:
    if value is None:
        return None
    try:
        return confidence_value(value)
    except InvalidInputError as e:
        raise InvalidInputError("prior_confidence", message(e)) from None


def parsed_relations(value: object, source: object) -> tuple[tuple[str, str, int], ...]:
    """Check the shape of ``[kind, target id, created_at]`` triples (prepare checks the rest)."""
    if isinstance(value, str) or not isinstance(value, list):
        raise InvalidInputError("relations", "expected a list of [kind, target id, created_at]")
    out = []
    for triple in value:
        if not isinstance(triple, list) or len(triple) != 3:
            raise InvalidInputError("relations", "each relation is [kind, target id, created_at]")
        kind, target, created = triple
        if target == source:
            raise InvalidInputError("relations", "a memory cannot point at itself")
        out.append((kind, target, micros(created, "relations")))
    return tuple(out)


def parsed_vectors(rows: object, content: str, dims: int) -> Embedded | None:
    """Decode and validate a memory's vectors; ``None`` (embed afresh) when there are none.

    They go through the same check as a caller-given vector (finite, non-zero,
    ``dims`` long) and are stored as unit vectors; an exported vector comes
    back bit for bit.
    """
    if rows is None or rows == []:
        return None
    if not isinstance(rows, list):
        raise InvalidInputError("vectors", "expected a list of {start, end, f32le}")
    spans: list[tuple[int, int]] = []
    blobs: list[bytes] = []
    for row in rows:
        if not isinstance(row, dict) or set(row) != VECTOR_FIELDS:
            raise InvalidInputError("vectors", "each vector is {start, end, f32le}")
        start, end, encoded = row["start"], row["end"], row["f32le"]
        if not (is_int(start) and is_int(end) and 0 <= start <= end <= len(content)):
            raise InvalidInputError(
                "vectors", f"span [{start!r}, {end!r}) is not within the content"
            )
        if not isinstance(encoded, str):
            raise InvalidInputError("vectors", "f32le must be a base64 string")
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError("vectors", "f32le is not valid base64") from None
        if len(blob) != 4 * dims:
            raise InvalidInputError(
                "vectors", f"expected {dims} float32 values, got {len(blob) / 4:g}"
            )
        spans.append((start, end))
        blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dims)
    return Embedded(spans, normalized(matrix, dims, "vectors"))


def parsed_link(item: dict[str, Any]) -> Link:
    """Validate a link line as :meth:`embedmind.Store.link_namespaces` does."""
    known(item, LINK_FIELDS, "link")
    for name in ("src", "dst", "created_at"):
        if name not in item:
            raise InvalidInputError(name, "missing")
    tiers = item.get("tiers")
    if tiers is not None:
        if not isinstance(tiers, list):
            raise InvalidInputError("tiers", "expected null or a list of tiers")
        for tier in tiers:
            if tier not in TIERS:
                raise InvalidInputError("tiers", f"{tier!r} is not a tier")
    note = item.get("note", "")
    if not isinstance(note, str):
        raise InvalidInputError("note", "expected a str")
    no_surrogates(note, "note")
    return (
        normalize_namespace(item["src"], "src"),
        normalize_namespace(item["dst"], "dst"),
        tiers,
        note,
        micros(item["created_at"], "created_at"),
    )
