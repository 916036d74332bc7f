"""The alias table on PostgreSQL: postings equal a rebuild, text recall equals the SQLite backend's.

The engine's alias tests (``test_conformance_aliases.py``) run on this backend
unchanged; the ones that read SQLite's posting blocks are left out there and
have their PostgreSQL form here: after every memory write and alias change the
postings equal a rebuild under the final table with nothing left pending, an
emptied table indexes as no table did, and the same steps on a SQLite store and
a PostgreSQL store give the same text recall, alias expansions and explain.
"""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conformance import TESTS
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind import plugins
from embedmind.backend.postgres import alias_rows, lexical, plugin
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.errors import InvalidInputError

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # the engine tests' step helpers

from test_aliases import ALIASES, BAD, alias_op, apply_alias
from test_session_context import apply
from test_session_context import op as memory_op

_schemas = itertools.count()
QUERIES = ["dog", "hound pet", "cello recital", "portugal", "animal doctor", "bees job", "walk"]


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator[str]:
    registered = plugins.manager().is_registered(plugin)
    if not registered:
        plugins.register(plugin, name="postgresql-alias-postings")
    yield pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))
    if not registered:
        plugins.unregister(plugin)


def _open(pg_url: str) -> embedmind.Store:
    return embedmind.Store.open(f"{pg_url}?schema=a{next(_schemas)}", embedder=None)


def snapshot(conn: Any) -> dict[str, Any]:
    """Everything the text index holds (keys are this store's own)."""
    postings = conn.execute("SELECT term, key, tf, length FROM lex_postings").fetchall()
    docs = conn.execute("SELECT key, length, has_links, prev_key, next_key FROM lex_docs")
    return {
        "postings": {tuple(r) for r in postings},
        "docs": {tuple(r) for r in docs.fetchall()},
        "stats": lexical.statistics(conn),
    }


def rebuilt(store: embedmind.Store) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The index as maintained, as a rebuild makes it (rolled back), and the pending count."""
    with store._backend.write() as w:  # type: ignore[attr-defined]
        kept = snapshot(w.conn)
        pending = int(w.conn.execute("SELECT count(*) FROM alias_pending").fetchone()[0])
        w.conn.execute("SAVEPOINT oracle")
        lexical.rebuild(w.conn, session_context=w.sessions.context_enabled())
        fresh = snapshot(w.conn)
        w.conn.execute("ROLLBACK TO SAVEPOINT oracle")
    return kept, fresh, pending


@settings(max_examples=12, deadline=None)
@given(st.lists(st.one_of(memory_op, alias_op, alias_op), min_size=4, max_size=14))
def test_incremental_postings_equal_a_rebuild_with_the_final_table(
    pg_url: str, steps: list[tuple[Any, ...]]
) -> None:
    with _open(pg_url) as store:
        made: dict[str, str] = {}
        for step in steps:
            if step[0] in ("set", "remove"):
                apply_alias(store, step)
            else:
                apply(store, step, made)
            kept, fresh, pending = rebuilt(store)
            assert kept == fresh, step
            assert pending == 0, step


def test_an_emptied_table_indexes_exactly_as_a_store_that_never_had_one(pg_url: str) -> None:
    texts = ["my dog hates the vet", "a cello recital in lisbon", "bees", "hike with the dog"]
    with _open(pg_url) as plain, _open(pg_url) as emptied:
        emptied.set_aliases(ALIASES)
        for i, text in enumerate(texts):
            for store in (plain, emptied):
                store.remember(text, id=f"m{i}", session_id="s" if i < 3 else None)
        assert emptied.remove_aliases(list(ALIASES)) == len(ALIASES)
        assert rebuilt(plain)[0] == rebuilt(emptied)[0]  # both fresh schemas: the same keys
        for query in QUERIES:
            left = plain.recall(query, mode="text", k=10)
            right = emptied.recall(query, mode="text", k=10)
            assert [(h.id, h.score) for h in left] == [(h.id, h.score) for h in right]


# Every third case: validation is the engine's (run in full by the conformance
# module); this checks that a refused change leaves PostgreSQL untouched.
@pytest.mark.parametrize(("bad", "says"), BAD[::3])
def test_bad_aliases_raise_a_typed_error_and_write_nothing(
    pg_url: str, bad: object, says: str
) -> None:
    with _open(pg_url) as store:
        store.set_aliases({"bob": "robert"})
        store.remember("bob and the nyc trip")

        def state() -> Any:
            with store._backend.read() as r:  # type: ignore[attr-defined]
                version = r.conn.execute(
                    "SELECT value FROM meta WHERE key = %s", (alias_rows.VERSION,)
                ).fetchone()
                return snapshot(r.conn), version, store.aliases()

        before = state()
        with pytest.raises(InvalidInputError, match=says):
            store.set_aliases(bad)  # type: ignore[arg-type]
        assert state() == before


@pytest.mark.parametrize("source_kind", ["sqlite", "postgresql"])
def test_aliases_travel_with_an_export(pg_url: str, source_kind: str) -> None:
    opened = (
        embedmind.Store.open(":memory:", embedder=None)
        if source_kind == "sqlite"
        else _open(pg_url)
    )
    with opened as source:
        source.set_aliases({"NYC": "new york", "bob": "robert"})
        source.remember("bob moved to NYC", session_id="s")
        source.remember("a nice flat there", session_id="s")
        out = io.StringIO()
        source.export_jsonl(out)
    with _open(pg_url) as target:
        target.set_aliases({"bob": "bobby", "cal": "california"})
        target.import_jsonl(io.StringIO(out.getvalue()))
        assert target.aliases() == {"bob": "robert", "cal": "california", "NYC": "new york"}
        assert target.recall("robert in york", mode="text")[0].content == "bob moved to NYC"
        kept, fresh, pending = rebuilt(target)
        assert kept == fresh and pending == 0


def _answers(store: embedmind.Store) -> list[Any]:
    out: list[Any] = [store.aliases()]
    for query in QUERIES:
        hits = store.recall(query, mode="text", k=50, explain=True)
        # By content: a supersede gives the new version a generated id on each side.
        out.append(
            sorted(
                (h.content, h.channels["text"].via_context, h.channels["text"].raw) for h in hits
            )
        )
    return out


def _same_answers(got: list[Any], want: list[Any]) -> None:
    """The same aliases and hits, the scores equal up to the backends' float precisions.

    Not rounded: the backends sum in float32 and float64, and a rounding
    boundary between them once split two equal scores (0.64625 against 0.64626).
    """
    assert got[0] == want[0]
    for hits, expected in zip(got[1:], want[1:], strict=True):
        assert [h[:2] for h in hits] == [h[:2] for h in expected]
        assert [h[2] for h in hits] == pytest.approx([h[2] for h in expected], rel=1e-5, abs=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.one_of(memory_op, alias_op), min_size=3, max_size=14))
def test_text_recall_with_aliases_equals_the_sqlite_backends(
    pg_url: str, steps: list[tuple[Any, ...]]
) -> None:
    # The same store-level steps on each backend; SQLite is the oracle.
    with embedmind.Store.open(":memory:", embedder=None) as oracle, _open(pg_url) as store:
        made: tuple[dict[str, str], dict[str, str]] = ({}, {})
        for step in steps:
            for target, names in zip((oracle, store), made, strict=True):
                if step[0] in ("set", "remove"):
                    apply_alias(target, step)
                else:
                    apply(target, step, names)
        _same_answers(_answers(store), _answers(oracle))
