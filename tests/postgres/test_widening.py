"""Key-term widening on PostgreSQL: exact primary scores, admitted only, the SQLite backend's lists.

``tests/test_query_side.py``'s channel oracle reads SQLite's posting lists, so
the conformance module leaves it out; this is its PostgreSQL form (the
whole query's score of every widened candidate, over all postings, and the
filter), and a differential test against the SQLite backend's
``text_widened`` on the same memories.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conformance import TESTS
from hypothesis import assume, given, settings

import embedmind
from embedmind import plugins
from embedmind.backend.postgres import plugin
from embedmind.backend.postgres.lexical import query_terms
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.lexical.analyzer import analyze
from embedmind.lexical.bm25 import idf, upper_bound
from embedmind.query.selection import Selection
from embedmind.timestamps import to_micros

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from test_query_side import query_side_cases

_schemas = itertools.count()


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> Iterator[str]:
    registered = plugins.manager().is_registered(plugin)
    if not registered:
        plugins.register(plugin, name="postgresql-widening")
    yield pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))
    if not registered:
        plugins.unregister(plugin)


def _fill(store: embedmind.Store, texts: list[str]) -> None:
    store.remember_many(
        [
            embedmind.Draft(t, id=f"d{i}", metadata={"group": "ab"[i % 3 == 0]})
            for i, t in enumerate(texts)
        ]
    )


def _near_ties(texts: list[str], query: str) -> bool:
    """Whether two memories that score differently in exact arithmetic come within float32 noise.

    For any subset of the query's terms (the whole query and every key-term
    sub-query among them). Each backend sums float32 contributions that it
    computes in its own float64 arithmetic, so two scores that close (or
    equal in exact arithmetic but reached by other sums) may be ordered
    either way, and both are right. Memories with the same term counts and
    length score bit for bit alike in each backend, and both order those by
    key.
    """
    docs = [analyze(text) for text in texts]
    avgdl = sum(map(len, docs)) / len(docs)
    counts = [Counter(doc) for doc in docs]
    terms = query_terms(query)
    weights = {t: idf(sum(t in c for c in counts), len(docs)) for t in terms}
    for size in range(1, len(terms) + 1):
        for subset in itertools.combinations(terms, size):
            scored: dict[tuple[tuple[int, int], ...], float] = {}
            for doc, count in zip(docs, counts, strict=True):
                shape = tuple((count[t], len(doc) if count[t] else 0) for t in subset)
                # A posting's BM25 weight: the bound of a block of that one posting.
                scored[shape] = sum(
                    upper_bound(tf, length, weights[t], avgdl)
                    for t, (tf, length) in zip(subset, shape, strict=True)
                    if tf
                )
            ordered = sorted(scored.values())
            if any(math.isclose(a, b, rel_tol=1e-6) for a, b in itertools.pairwise(ordered)):
                return True
    return False


def _selection(where: Any) -> Selection:
    return Selection.of(to_micros(dt.datetime.now(dt.timezone.utc), "now"), where=where)


@settings(max_examples=15, deadline=None)
@given(query_side_cases())
def test_widened_candidates_carry_the_primary_score(pg_url: str, case: dict[str, Any]) -> None:
    query, where = str(case["query"]), case["where"]
    with embedmind.Store.open(f"{pg_url}?schema=w{next(_schemas)}", embedder=None) as store:
        _fill(store, case["texts"])
        with store._backend.read() as r:  # type: ignore[attr-defined]
            everything, admitted_only = _selection(None), _selection(where)
            found, widened, via = r.channels.text_widened(query, admitted_only, 20, 20)
            exact = dict(r.channels.text_top(query, everything, 10_000))
            admitted = {k for k, _ in r.channels.text_top(query, admitted_only, 10_000)}
            assert found == r.channels.text_top(query, admitted_only, 20)
    primary = {key for key, _ in found}
    assert [s for _, s in widened] == sorted((s for _, s in widened), reverse=True)
    assert via.keys() == {key for key, _ in widened}
    for key, score in widened:
        assert score == pytest.approx(exact[key], rel=1e-9)
        assert key not in primary and key in admitted
        assert via[key] in query_terms(query)


@settings(max_examples=10, deadline=None)
@given(query_side_cases())
def test_widening_equals_the_sqlite_backends(pg_url: str, case: dict[str, Any]) -> None:
    query, selection = str(case["query"]), _selection(case["where"])
    assume(not _near_ties(case["texts"], query))
    answers = []
    with (
        embedmind.Store.open(":memory:", embedder=None) as oracle,
        embedmind.Store.open(f"{pg_url}?schema=w{next(_schemas)}", embedder=None) as store,
    ):
        for target in (oracle, store):
            _fill(target, case["texts"])
            with target._backend.read() as r:  # type: ignore[attr-defined]
                found, widened, via = r.channels.text_widened(query, selection, 30, 20)
                name = {k: i.id for k, i in r.records.identities([*via, *dict(found)]).items()}
            answers.append(
                {
                    "found": [name[k] for k, _ in found],
                    "widened": [name[k] for k, _ in widened],
                    "via": {name[k]: t for k, t in via.items()},
                    "scores": [s for _, s in [*found, *widened]],
                }
            )
    ours, theirs = answers[1], answers[0]
    # Equal to float32 precision (both sum float32 contributions): rounded to
    # a fixed decimal, two such scores can land either side of a boundary.
    assert ours.pop("scores") == pytest.approx(theirs.pop("scores"), rel=1e-6)
    assert ours == theirs
