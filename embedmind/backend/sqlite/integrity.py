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
