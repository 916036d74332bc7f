"""The ``vectorless`` table (schema migration 5) always holds the live memories without a vector.

The missing-vectors note of every vector recall reads it instead of an
anti-join over the store, so after any mix of writes with and without an
embedder, upserts, forgets, deletes, vacuums and re-embeds it must name
exactly what the anti-join names.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind
from embedmind import plugins
from embedmind.backend.postgres import plugin
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.embedders import HashingEmbedder

_schemas = itertools.count()
ORACLE = (
    "SELECT m.key FROM memories m WHERE m.forgotten_at IS NULL "
    "AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.key = m.key) ORDER BY m.key"
)


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator[str]:
    registered = plugins.manager().is_registered(plugin)
    if not registered:
        plugins.register(plugin, name="postgresql-vectorless")
    yield pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))
    if not registered:
        plugins.unregister(plugin)


ident = st.sampled_from([f"m{i}" for i in range(5)])
step = st.one_of(
    st.tuples(st.just("write"), ident, st.booleans(), st.sampled_from(["dog", "cello walk"])),
    st.tuples(st.just("forget"), ident),
    st.tuples(st.just("delete"), ident),
    st.tuples(st.just("vacuum")),
    st.tuples(st.just("reembed")),
)


def missing(store: embedmind.Store) -> tuple[tuple[int, ...], tuple[int, ...]]:
    with store._backend.read() as r:  # type: ignore[attr-defined]
        oracle = tuple(int(row[0]) for row in r.conn.execute(ORACLE))
        return r.channels.missing_vectors(), oracle


@settings(max_examples=25, deadline=None)
@given(st.lists(step, min_size=3, max_size=12))
def test_vectorless_names_what_an_anti_join_names(
    pg_url: str, steps: list[tuple[Any, ...]]
) -> None:
    location = f"{pg_url}?schema=v{next(_schemas)}"
    embedder = HashingEmbedder(16)
    with embedmind.Store.open(location, embedder=embedder):
        pass  # the model is recorded once, so text-only opens can write later
    for s in steps:
        if s[0] == "reembed":
            embedmind.reembed(location, embedder, missing=True)
            continue
        with_vectors = s[0] != "write" or s[2]
        with embedmind.Store.open(location, embedder=embedder if with_vectors else None) as store:
            if s[0] == "write":
                store.remember(s[3], id=s[1])
            elif s[0] == "forget":
                store.forget(s[1])
            elif s[0] == "delete":
                store.delete(s[1])
            else:
                store.vacuum()
            kept, oracle = missing(store)
            assert kept == oracle, s
