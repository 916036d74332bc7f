"""An upsert that moves a memory to another session keeps the PostgreSQL text index exact.

The engine replaces the row before it unindexes it, so the row already names
the new dialog; the old dialog's neighbours must still lose their links to it.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conformance import TESTS

import embedmind
from embedmind import plugins
from embedmind.backend.postgres import plugin
from embedmind.backend.postgres.testing import ThrowawayServer

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # the engine tests' step helpers

from test_alias_postings import rebuilt
from test_session_context import apply

_schemas = itertools.count()


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator[str]:
    registered = plugins.manager().is_registered(plugin)
    if not registered:
        plugins.register(plugin, name="postgresql-session-move")
    yield pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))
    if not registered:
        plugins.unregister(plugin)


@pytest.mark.parametrize(
    "steps",
    [
        [  # the shrunk case: the superseding memory stays behind in s1
            ("write", "m0", "dog hike", "a", "s1", 0),
            ("supersede", "m0", "cello"),
            ("write", "m0", "dog", "a", "s1", 1),
            ("write", "m0", "dog", "a", "s2", 2),
        ],
        [  # a middle turn leaves: both neighbours relink to each other
            ("write", "m0", "lisbon", "a", "s1", 0),
            ("write", "m1", "dog", "a", "s1", 1),
            ("write", "m2", "vet", "a", "s1", 2),
            ("write", "m1", "dog", "a", None, 1),
        ],
    ],
)
def test_moving_a_memory_out_of_its_dialog_equals_a_rebuild(
    pg_url: str, steps: list[tuple[Any, ...]]
) -> None:
    with embedmind.Store.open(f"{pg_url}?schema=mv{next(_schemas)}", embedder=None) as store:
        made: dict[str, str] = {}
        for step in steps:
            apply(store, step, made)
            kept, fresh, pending = rebuilt(store)
            assert kept == fresh, step
            assert pending == 0, step
