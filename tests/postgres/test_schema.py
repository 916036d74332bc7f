"""Schema migrations under the advisory lock, and namespace scopes in SQL."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from embedmind.backend.postgres import schema
from embedmind.backend.postgres.scopes import compile_scope, escape_like
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.errors import InvalidInputError, SchemaVersionError
from embedmind.query.scope import in_scope

_RACER = textwrap.dedent(
    """
    import sys, time, psycopg
    from embedmind.backend.postgres import schema
    dsn, start_at = sys.argv[1], float(sys.argv[2])
    with psycopg.connect(dsn, autocommit=True) as conn:
        time.sleep(max(0.0, start_at - time.time()))  # both begin at the same instant
        print(schema.migrate(conn, "racing"))
    """
)


def test_two_processes_migrating_a_new_database_at_once_do_not_race(
    pg_server: ThrowawayServer,
) -> None:
    import time

    pg_server.drop_database("race")
    dsn = pg_server.create_database("race")
    start_at = time.time() + 1.5  # after both interpreters have imported psycopg
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, dsn, str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=60) for racer in racers]
    for racer, (out, err) in zip(racers, outputs, strict=True):
        assert racer.returncode == 0, err
        assert out.strip() == str(schema.LATEST)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT version FROM racing.schema_migrations").fetchall()
        assert sorted(rows) == [(n,) for n in range(1, schema.LATEST + 1)]
    pg_server.drop_database("race")


def test_migrate_is_idempotent_and_creates_the_extension(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert schema.migrate(conn, "idem") == schema.LATEST
        assert schema.migrate(conn, "idem") == schema.LATEST
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        assert schema.schema_version(conn, "idem") == schema.LATEST
        # The search path now leads to the store's tables.
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_a_newer_schema_is_refused(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        schema.migrate(conn, "future")
        conn.execute(
            "INSERT INTO future.schema_migrations (version, name) VALUES (%s, 'from_the_future')",
            (schema.LATEST + 1,),
        )
        with pytest.raises(SchemaVersionError, match="upgrade embedmind"):
            schema.migrate(conn, "future")


def test_schema_names_are_identifiers() -> None:
    with pytest.raises(InvalidInputError, match="lower-case identifier"):
        schema.check_schema_name('x"; DROP TABLE memories; --')


def test_record_dimensions_builds_the_index_once(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        schema.migrate(conn, "dims")
        with conn.transaction():
            schema.record_dimensions(conn, 8)
        with conn.transaction():
            schema.record_dimensions(conn, 8)
        assert schema.dimensions(conn) == 8
        with pytest.raises(InvalidInputError, match="8-dimensional"), conn.transaction():
            schema.record_dimensions(conn, 9)
        indexes = {
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'dims' AND indexname LIKE '%hnsw'"
            )
        }
        assert indexes == {"memory_vectors_hnsw", "fragments_hnsw"}


# -- namespaces --------------------------------------------------------------

_SEGMENT = st.sampled_from(["a", "b", "b_c", "bxc", "b%", "bc", "b\\", "b\\_", "%", "_", "é"])
_NAMESPACE = st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join)


@pytest.fixture(scope="module")
def ns_conn(pg_dsn: str) -> psycopg.Connection[object]:
    conn: psycopg.Connection[object] = psycopg.connect(pg_dsn, autocommit=True)
    conn.execute('CREATE TEMP TABLE ns (namespace text COLLATE "C" NOT NULL)')
    yield conn  # type: ignore[misc]
    conn.close()


def _matching(conn: psycopg.Connection[object], scope: object) -> set[str]:
    condition, params = compile_scope(scope, sql.Identifier("namespace"))  # type: ignore[arg-type]
    query = sql.SQL("SELECT namespace FROM ns WHERE {}").format(condition)
    return {row[0] for row in conn.execute(query, params)}


def test_a_sibling_namespace_with_like_wildcards_never_leaks(
    ns_conn: psycopg.Connection[object],
) -> None:
    namespaces = ["a/b_c", "a/bxc", "a/b%", "a/bc", "a/b%/x", "a/bz/x", "a/b_c/d", "a/b\\/x"]
    ns_conn.execute("DELETE FROM ns")
    with ns_conn.cursor() as cur:
        cur.executemany("INSERT INTO ns VALUES (%s)", [(n,) for n in namespaces])
    assert _matching(ns_conn, "a/b%/*") == {"a/b%", "a/b%/x"}
    assert _matching(ns_conn, "a/b_c/*") == {"a/b_c", "a/b_c/d"}
    assert _matching(ns_conn, "a/b_c") == {"a/b_c"}
    assert _matching(ns_conn, "a/b\\/*") == {"a/b\\/x"}
    assert _matching(ns_conn, "a/*") == set(namespaces)


@settings(max_examples=60, deadline=None)
@given(stored=st.sets(_NAMESPACE, min_size=1, max_size=12), scope=st.one_of(
    _NAMESPACE, _NAMESPACE.map(lambda n: n + "/*"),
    st.lists(st.one_of(_NAMESPACE, _NAMESPACE.map(lambda n: n + "/*")), min_size=1, max_size=3),
))  # fmt: skip
def test_scopes_in_sql_match_the_engines_own_rule(
    ns_conn: psycopg.Connection[object], stored: set[str], scope: object
) -> None:
    ns_conn.execute("DELETE FROM ns")
    with ns_conn.cursor() as cur:
        cur.executemany("INSERT INTO ns VALUES (%s)", [(n,) for n in stored])
    expected = {n for n in stored if in_scope(n, scope)}  # type: ignore[arg-type]
    assert _matching(ns_conn, scope) == expected


def test_escape_like_escapes_the_escape_first() -> None:
    assert escape_like("a\\_%") == "a\\\\\\_\\%"
