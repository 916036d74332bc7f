"""SQL naming the rows a mutation touched: ``(id, namespace, tier)`` by internal key.

The commit path reports every memory a mutation changed or removed; it needs
only these three columns, read as bytes so that a row whose content (or even
id) is damaged is still named, never refused: a delete or a move must go on
working on exactly the rows a damaged-row read refuses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import apsw


def identities(
    conn: apsw.Connection, keys: Sequence[int], *, live: bool = False
) -> dict[int, tuple[str, str, str]]:
    """``{key: (id, namespace, tier)}`` of the rows with these keys (missing keys are skipped).

    With ``live``, forgotten rows (tombstones) are skipped too.

    A value that is not valid UTF-8 is decoded with replacement characters;
    an undecodable id is named ``"key:N"``, as damaged-row errors name it.
    """
    if not keys:
        return {}
    rows = conn.execute(
        "SELECT key, CAST(id AS BLOB), CAST(namespace AS BLOB), tier FROM memories "
        "WHERE key IN (SELECT value FROM json_each(?)) AND (? OR forgotten_at IS NULL) "
        "ORDER BY key",
        (json.dumps([int(k) for k in keys]), not live),
    )
    return {
        int(k): (_id(int(k), i), bytes(n).decode("utf-8", "replace"), str(t)) for k, i, n, t in rows
    }


def _id(key: int, raw: bytes) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return f"key:{key}"
