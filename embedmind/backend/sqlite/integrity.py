"""The row check behind ``embedmind doctor --verify``: every memory row, decoded as a read would.

A row of ``memories`` is damaged when a text column no longer decodes as
UTF-8, when its content no longer matches the fingerprint written with it
(one changed byte: ``PRAGMA integrity_check`` sees neither, since SQLite does
not check what a TEXT value holds), or when a value does not decode as a read
needs it (:mod:`embedmind.backend.memory_rows`: JSON, a tier, a time, a
confidence in [0, 1]). The scan applies the reads' own check, so it lists
exactly the memories a read refuses.
"""

from __future__ import annotations

from typing import Any

from embedmind.backend import memory_rows
from embedmind.backend.values import EXPORT_COLUMNS

TEXT_COLUMNS = (
    "id", "namespace", "content", "metadata", "tags", "tier", "level", "agent",
    "session_id", "superseded_by", "contradicted_by", "fingerprint",
)  # fmt: skip
"""The TEXT columns of ``memories`` (the ones a damaged byte breaks)."""
_SCAN_SQL = (
    "SELECT "
    + ", ".join(f"CAST({c} AS BLOB)" if c in TEXT_COLUMNS else c for c in EXPORT_COLUMNS)
    + " FROM memories WHERE key > ? ORDER BY key LIMIT ?"
)


def scan_page(conn: Any, after: int, limit: int) -> tuple[list[tuple[str, str]], int, int]:
    """Check one page of rows (forgotten ones too: their content stays until vacuum).

    Every TEXT value is read as bytes and decoded here, so no row can break
    the scan; each decoded row is then checked as an export reads it.

    Returns:
        ``([(id, reason), ...], last key, rows read)``.
    """
    damaged: list[tuple[str, str]] = []
    rows = conn.execute(_SCAN_SQL, (after, limit)).fetchall()
    for row in rows:
        decoded = dict(zip(EXPORT_COLUMNS, row, strict=True))
        bad = [name for name in TEXT_COLUMNS if not _decode(decoded, name)]
        name = decoded["id"] if isinstance(decoded["id"], str) else f"key:{row[0]}"
        problem = (
            f"not valid UTF-8: {', '.join(bad)}"
            if bad
            else memory_rows.export_problem(tuple(decoded.values()))
        )
        if problem is not None:
            damaged.append((str(name), problem))
    return damaged, (int(rows[-1][0]) if rows else after), len(rows)


def _decode(values: dict[str, Any], name: str) -> bool:
    raw = values[name]
    try:
        values[name] = None if raw is None else bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
