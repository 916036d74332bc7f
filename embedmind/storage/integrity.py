"""Typed errors for stored data that is damaged or not yet scrubbed, and the row check.

A row of ``memories`` is damaged when a text column no longer decodes as
UTF-8, or when its content no longer matches the fingerprint written with it
(one changed byte: ``PRAGMA integrity_check`` sees neither, since SQLite does
not check what a TEXT value holds). The fingerprint is the dedup hash of
:func:`embedmind.drafts.fingerprint`, so the check costs one normalisation
and one SHA-256 per loaded row.
"""

from __future__ import annotations

from typing import Any

from embedmind.drafts import fingerprint
from embedmind.errors import StorageError

REPAIR_HINT = (
    "restore it from an export or backup (import_jsonl), or replace it with "
    "store.redact(id, content) or drop it with store.forget(id) / store.delete(id)"
)


class DamagedRecordError(StorageError):
    """A stored memory no longer reads back as it was written; other memories are unaffected.

    Attributes:
        ids: The damaged memories (their internal key as ``"key:N"`` when even
            the id cannot be read).
        reason: What is wrong, e.g. ``"content is not valid UTF-8"``.
    """

    def __init__(self, ids: list[str], reason: str) -> None:
        named = ", ".join(repr(i) for i in ids[:10]) + (" ..." if len(ids) > 10 else "")
        super().__init__(
            f"memory {named} is damaged in the store file ({reason}); {REPAIR_HINT}; "
            "`embedmind doctor --verify` lists every damaged memory"
        )
        self.ids = tuple(ids)
        self.reason = reason


class RedactionIncompleteError(StorageError, TimeoutError):
    """A redaction committed, but the old content may still be in the write-ahead log.

    The memory already holds the new content everywhere it is read from; what
    is not done is the truncation of the WAL, which still holds the pages of
    the old content until every reader of an older snapshot has finished.

    Attributes:
        id: The redacted memory.
        reason: What prevented the truncation.
    """

    def __init__(self, id: str, reason: str, timeout: float) -> None:
        super().__init__(
            f"redacted {id!r}: the new content is committed, but the old bytes remain in the "
            f"write-ahead log because {reason} (waited {timeout:g}s); they are removed once "
            "readers finish: run the same redact again, or vacuum(), when they have "
            "(a longer checkpoint_timeout= waits for them)"
        )
        self.id = id
        self.reason = reason


def content_problem(content: object, stored_fingerprint: object) -> str | None:
    """What is wrong with a row's content, or ``None`` when it matches its fingerprint."""
    if not isinstance(content, str):
        return "content is not valid UTF-8"
    if fingerprint(content) != stored_fingerprint:
        return "content no longer matches its fingerprint"
    return None


_SCAN_TEXT = (
    "id", "namespace", "content", "metadata", "tags", "tier", "level", "agent",
    "session_id", "superseded_by", "contradicted_by", "fingerprint",
)  # fmt: skip
_SCAN_SQL = (
    "SELECT key, "
    + ", ".join(f"CAST({c} AS BLOB)" for c in _SCAN_TEXT)
    + " FROM memories WHERE key > ? ORDER BY key LIMIT ?"
)


def scan_page(conn: Any, after: int, limit: int) -> tuple[list[tuple[str, str]], int, int]:
    """Check one page of rows (forgotten ones too: their content stays until vacuum).

    Every TEXT value is read as bytes and decoded here, so no row can break
    the scan, and each content is checked against its fingerprint.

    Returns:
        ``([(id, reason), ...], last key, rows read)``.
    """
    damaged: list[tuple[str, str]] = []
    rows = conn.execute(_SCAN_SQL, (after, limit)).fetchall()
    for row in rows:
        texts = dict(zip(_SCAN_TEXT, row[1:], strict=True))
        decoded: dict[str, str | None] = {}
        bad = [name for name, raw in texts.items() if not _decode(raw, name, decoded)]
        name = decoded["id"] if decoded.get("id") is not None else f"key:{row[0]}"
        if bad:
            damaged.append((str(name), f"not valid UTF-8: {', '.join(bad)}"))
            continue
        problem = content_problem(decoded["content"], decoded["fingerprint"])
        if problem is not None:
            damaged.append((str(name), problem))
    return damaged, (int(rows[-1][0]) if rows else after), len(rows)


def _decode(raw: bytes | None, name: str, into: dict[str, str | None]) -> bool:
    try:
        into[name] = None if raw is None else bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
