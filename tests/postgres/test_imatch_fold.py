"""PostgreSQL folds each code point as Python's ``str.casefold`` does (``$imatch``).

Full case folding maps each code point on its own, with no context, so a
string folds to its code points' folds in order: equal folds of every code
point make equal folds of every string. Checked for every code point Python's
Unicode database assigns (``unicodedata.unidata_version``); a code point it
does not know yet, Python leaves as it is, where the server may fold it.
"""

from __future__ import annotations

import unicodedata

import psycopg

from embedmind.backend.postgres.where_sql import FOLD_SQL

_BATCH = 50_000


def _assigned() -> list[str]:
    """Every code point Python's Unicode database assigns, but NUL and the surrogates."""
    return [chr(c) for c in range(1, 0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Cs")]


def test_the_server_folds_every_assigned_code_point_as_python(pg_dsn: str) -> None:
    query = f"SELECT c, {FOLD_SQL.format('c')} FROM unnest(%s::text[]) AS c"
    points = _assigned()
    differ = []
    with psycopg.connect(pg_dsn) as conn:
        for start in range(0, len(points), _BATCH):
            for c, folded in conn.execute(query, [points[start : start + _BATCH]]):
                if folded != c.casefold():
                    differ.append((f"U+{ord(c):04X}", c.casefold(), folded))
    assert len(points) > 280_000
    assert not differ, differ[:20]
