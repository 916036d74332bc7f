"""Scopes of any length: every read path that takes one admits exactly what a plain oracle does.

A scope of 996 namespaces failed on SQLite (an ``OR`` chain deeper than its
1,000-level expression limit) and one of 70,000 on PostgreSQL (more than its
65,535 bound parameters). Each scope here lists a random draw of the store's
own namespaces, their ancestors and subtrees among fillers that mostly name
nothing, around the inline bound (64 items) and past both limits, and each
read's ids (``iter``, text, vector and hybrid recall, fragment queries, recall
following links) are compared with :func:`namespaces_in`, written from the
definition alone.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from query_plans import plan, traced

import embedmind
from embedmind.backend.sqlite.scope_sql import compile_scope as sqlite_scope
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.policies import FragmentPolicy
from embedmind.query.scope import Scope

DIMS = 16
NAMESPACES = [
    "a", "ab", "a-x", "a/b", "a/b/c", "a/bc", "a/b-c/d", "b", "b/a", "%", "%/x", "_/y",
    "a_b", "a\\b", "a\\b/c", "é", "é/ü/ß", "z/a/b/c/d", "zz", "q/r", "x/xx/x y", "x/xx",
]  # fmt: skip
"""Siblings that share a prefix (``a``, ``ab``, ``a-x``), ``LIKE`` wildcards and non-ASCII."""
PREFIXES = sorted({ns.rsplit("/", k)[0] for ns in NAMESPACES for k in range(ns.count("/") + 1)})
"""The namespaces and their ancestors (``z/a`` holds ``z/a/b/c/d`` without being stored)."""
SIZES = [1, 3, 64, 65, 995, 996, 5_000, 70_000]
LINKS = {"b": "q/r", "zz": "a_b"}
"""Links the follow-links reads widen through (``semantic`` and ``procedural`` tiers)."""
QUERY = "note"


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[embedmind.Store, dict[str, tuple[str, str]]]]:
    """Two memories per namespace (one per tier), and the oracle's view: id -> (namespace, tier)."""
    written: dict[str, tuple[str, str]] = {}
    drafts = []
    for i, namespace in enumerate(NAMESPACES):
        for tier in ("semantic", "working"):
            mid = f"m{i}-{tier}"
            written[mid] = (namespace, tier)
            drafts.append(embedmind.Draft(f"{QUERY} {i} {tier}", id=mid, namespace=namespace,
                                          tier=tier))  # fmt: skip
    policy = FragmentPolicy(chunker="words", window=8)  # one fragment per memory
    with embedmind.Store.open(
        ":memory:", embedder=HashingEmbedder(DIMS), fragment_policy=policy
    ) as s:
        s.remember_many(drafts)
        for src, dst in LINKS.items():
            s.link_namespaces(src, dst)
        yield s, written


def namespaces_in(scope: list[str]) -> set[str]:
    """The store's namespaces in ``scope``, by the definition.

    An exact item holds its namespace; a subtree ``r/*`` holds ``r`` and every
    namespace below ``r/``.
    """
    exact = {item for item in scope if not item.endswith("/*")}
    roots = [item[:-2] for item in scope if item.endswith("/*")]
    return {
        namespace
        for namespace in NAMESPACES
        if namespace in exact
        or any(namespace == root or namespace.startswith(root + "/") for root in roots)
    }


def oracle(written: dict[str, tuple[str, str]], scope: list[str], follow: bool) -> set[str]:
    """The ids a read of ``scope`` admits (with ``follow``: also the linked namespaces' tiers)."""
    admitted = namespaces_in(scope)
    granted = {dst for src, dst in LINKS.items() if follow and src in scope}
    return {
        mid
        for mid, (namespace, tier) in written.items()
        if namespace in admitted or (namespace in granted and tier in ("semantic", "procedural"))
    }


def a_scope(size: int, seed: int) -> list[str]:
    """``size`` items: a few of the store's namespaces, ancestors and subtrees; the rest fillers."""
    rng = random.Random(seed)
    real = [rng.choice(PREFIXES) + rng.choice(["", "/*"]) for _ in range(min(size, 10))]
    fillers = [
        rng.choice(["ghost/", "a/ghost", "ab", "%", "b/"]) + str(i) + rng.choice(["", "/*"])
        for i in range(size - len(real))
    ]
    items = real + fillers
    rng.shuffle(items)
    return items


def _reads(store: embedmind.Store, scope: list[str]) -> dict[str, Any]:
    vector = np.ones(DIMS, dtype=np.float32)
    reads: dict[str, Any] = {"iter": [m.id for m in store.iter(scope)]}
    for mode in ("text", "vector", "hybrid"):
        hits = store.recall(QUERY, k=1_000, mode=mode, vector=vector, namespace=scope).hits
        reads[mode] = [hit.memory.id for hit in hits]
    fragments = store.fragments.query(QUERY, k=1_000, namespace=scope)
    reads["fragments"] = [hit.record_id for hit in fragments]
    return reads


@pytest.mark.parametrize("size", SIZES)
def test_every_scoped_read_admits_what_the_oracle_does(
    store: tuple[embedmind.Store, dict[str, tuple[str, str]]], size: int
) -> None:
    s, written = store
    for seed in range(1 if size > 5_000 else 3):
        scope = a_scope(size, seed)
        expected = oracle(written, scope, follow=False)
        for path, ids in _reads(s, scope).items():
            assert sorted(ids) == sorted(expected), (size, seed, path)


@pytest.mark.parametrize("size", [3, 5_000])
def test_follow_links_widens_a_scope_of_any_length(
    store: tuple[embedmind.Store, dict[str, tuple[str, str]]], size: int
) -> None:
    s, written = store
    scope = [*a_scope(size - 2, 7), "b", "zz"]
    hits = s.recall(QUERY, k=1_000, mode="text", namespace=scope, follow_links=True).hits
    assert sorted(h.memory.id for h in hits) == sorted(oracle(written, scope, follow=True))


def test_many_links_widen_through_one_test_per_tier_set() -> None:
    # Each link was one more OR over the scope: 1,000 of them failed as a long scope did.
    with embedmind.Store.open(":memory:", embedder=None) as s:
        s.remember(QUERY, id="far", namespace="far/1", tier="semantic")
        s.remember(QUERY, id="near", namespace="near", tier="working")
        sources = [f"src/{i}" for i in range(1_000)]
        for src in sources:
            s.link_namespaces(src, "far/1" if src == "src/999" else f"dst/{src}")
        s.link_namespaces("src/0", "near", tiers=["working"])
        hits = s.recall(QUERY, mode="text", namespace=sources, follow_links=True).hits
        assert sorted(h.memory.id for h in hits) == ["far", "near"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_long_scope_compiles_to_one_statement_whatever_its_length(backend: str) -> None:
    # Past the inline bound a scope's SQL and its parameter count stay put: no
    # limit on either backend, and one statement to cache for every long scope.
    compiled = {_compiled(backend, a_scope(size, 1)) for size in (65, 996, 70_000)}
    assert len(compiled) == 1, compiled


def _compiled(backend: str, scope: list[str]) -> tuple[str, int]:
    """The scope's condition as SQL text, with its parameter count."""
    parsed = Scope.of(scope)
    if backend == "sqlite":
        text, params = sqlite_scope(parsed, "m.namespace", [("b", ["semantic"])])
        return text, len(params)
    pg_sql = pytest.importorskip("psycopg.sql")
    pg_scope = pytest.importorskip("embedmind.backend.postgres.scopes").compile_scope
    composed, values = pg_scope(parsed, pg_sql.SQL("m.namespace"), [("b", ["semantic"])])
    return composed.as_string(), len(values)


def _plans(store: embedmind.Store, run: Any, marker: str) -> list[list[str]]:
    """SQLite's plan of each statement ``run()`` executes that holds ``marker``."""
    with store._db.read() as conn:
        return [
            plan(conn, statement, bindings)
            for statement, bindings in traced(conn, run)
            if marker in statement and "memories" in statement
        ]


def test_a_short_listing_seeks_the_namespace_index_on_every_page() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as s:
        s.remember_many([embedmind.Draft(f"note {i}", namespace="ab"[i % 2]) for i in range(600)])
        listed: list[Any] = []
        plans = _plans(s, lambda: listed.extend(s.iter(["a", "ghost/1", "ghost/2"])), "")
    assert len(listed) == 300 and {m.namespace for m in listed} == {"a"}
    assert len(plans) > 1  # the pages after the first too
    for steps in plans:
        assert any("USING INDEX memories_by_namespace (namespace=?" in step for step in steps), (
            steps
        )
        assert not [step for step in steps if step.startswith("SCAN m")], steps


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_a_long_scope_checks_recall_candidates_by_key(mode: str) -> None:
    # As tests/test_admission_plans.py pins for one namespace: a recall's
    # candidates are read by key, never by walking an index of memories.
    scope = ["a", *(f"ghost/{i}" for i in range(1_000)), "a/*", "ghost/*"]
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as s:
        s.remember_many([embedmind.Draft(f"note {i}", namespace="ab"[i % 2]) for i in range(600)])
        vector = np.ones(DIMS, dtype=np.float32)
        hits: list[Any] = []

        def run() -> None:
            hits.extend(s.recall(QUERY, mode=mode, vector=vector, namespace=scope).hits)

        plans = _plans(s, run, "scope_up")
    assert hits and {hit.memory.namespace for hit in hits} == {"a"}
    assert plans
    for steps in plans:
        assert "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)" in steps, steps
        assert not [step for step in steps if "memories_by_" in step], steps
