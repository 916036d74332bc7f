"""The store against a plain-Python model (RELIABILITY.md R6).

Rules: add, batch add (a bad item applies nothing), update, forget, delete,
supersede, redact, relations, vacuum, reopen, and reopen with the vector index
files lost or replaced by stale copies. Invariants compare the listing, text
recall, the graph and stats with the model, and vector recall with a brute-force
cosine over the model's live vectors. The HNSW graph is searched even at these
sizes (``EXACT_BELOW`` is lowered for the machine), so the index files, their
reconciliation on open and the graph search are what is checked; recall@10
must stay ≥ 0.90. Sizes come from ``HYPOTHESIS_PROFILE`` (ci: 100 × 50,
nightly: 3,000 × 150).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

import embedmind
from embedmind import Draft
from embedmind.backend.sqlite import hnsw
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.lexical.analyzer import analyze

if TYPE_CHECKING:
    from conftest import Figures

WORDS = ["apple", "banana", "cherry", "delta", "echo", "fox", "golf", "hotel", "india", "juliet"]
NAMESPACES = ["a", "a/b", "a/bc", "z"]
KINDS = ["refines", "mentions"]
EMBEDDER = HashingEmbedder(dims=32)
MIN_RECALL = 0.90

contents = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
metadata = st.dictionaries(
    st.sampled_from(["k", "n", "tag"]),
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text("xyz", max_size=3)),
    max_size=3,
)


@dataclass
class Row:
    namespace: str
    content: str
    metadata: dict[str, object]
    forgotten: bool = False
    superseded_by: str | None = None


@dataclass
class Model:
    rows: dict[str, Row] = field(default_factory=dict)
    edges: set[tuple[str, str, str]] = field(default_factory=set)  # (source, kind, target)

    def write(self, memory_id: str, namespace: str, content: str, meta: dict[str, object]) -> bool:
        """An upsert: replaces the row and its outgoing relations, keeps supersedes edges.

        A superseded version stays superseded: its successor's edge is kept, so
        the store keeps ``superseded_by`` too.
        """
        existing = self.rows.get(memory_id)
        if existing is not None and existing.namespace != namespace:
            return False
        by = None if existing is None else existing.superseded_by
        self.rows[memory_id] = Row(namespace, content, meta, superseded_by=by)
        self.edges = {e for e in self.edges if e[0] != memory_id or e[1] == "supersedes"}
        return True

    def drop(self, memory_id: str) -> None:
        """A memory gone for good (delete, or a tombstone removed by vacuum)."""
        del self.rows[memory_id]
        self.edges = {e for e in self.edges if memory_id not in (e[0], e[2])}

    def findable(self) -> dict[str, Row]:
        """What recall may return: live and not superseded."""
        return {i: r for i, r in self.rows.items() if not r.forgotten and r.superseded_by is None}


class StoreMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.exact_below = hnsw.EXACT_BELOW
        hnsw.EXACT_BELOW = 0  # search the HNSW graph, not the exact scan, at any size
        self.dir = Path(tempfile.mkdtemp(prefix="embedmind-sm-"))
        self.path = self.dir / "s.mind"
        self.index_file = Path(f"{self.path}-vectors")
        self.stash = self.dir / "stale-vectors"
        self.store = self._open()
        self.model = Model()
        self.counter = 0
        self.recall_hits = self.recall_wanted = 0

    def _open(self) -> embedmind.Store:
        return embedmind.Store.open(self.path, embedder=EMBEDDER, synchronous="NORMAL")

    def teardown(self) -> None:
        self.store.close()
        hnsw.EXACT_BELOW = self.exact_below
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.recall_wanted:
            RECALL.append((self.recall_hits, self.recall_wanted))

    def _new_id(self) -> str:
        self.counter += 1
        return f"id-{self.counter}"

    @rule(target=ids, content=contents, namespace=st.sampled_from(NAMESPACES), meta=metadata)
    def remember_new(self, content: str, namespace: str, meta: dict[str, object]) -> str:
        memory_id = self._new_id()
        self.store.remember(content, id=memory_id, namespace=namespace, metadata=meta)
        assert self.model.write(memory_id, namespace, content, meta)
        return memory_id

    @rule(memory_id=ids, content=contents, namespace=st.sampled_from(NAMESPACES), meta=metadata)
    def remember_existing(
        self, memory_id: str, content: str, namespace: str, meta: dict[str, object]
    ) -> None:
        expected_ok = self.model.write(memory_id, namespace, content, meta)
        try:
            self.store.remember(content, id=memory_id, namespace=namespace, metadata=meta)
            assert expected_ok
        except embedmind.ConflictError:
            assert not expected_ok

    @rule(
        batch=st.lists(
            st.tuples(contents, st.sampled_from(NAMESPACES), st.booleans()), min_size=1, max_size=6
        )
    )
    def remember_many(self, batch: list[tuple[str, str, bool]]) -> None:
        drafts = []
        for content, namespace, bad in batch:
            meta: dict[str, object] = {"x": float("nan")} if bad else {}
            drafts.append(Draft(content, id=self._new_id(), namespace=namespace, metadata=meta))
        try:
            self.store.remember_many(drafts, batch_size=4)
        except embedmind.InvalidInputError:
            assert any(bad for *_, bad in batch)  # a bad item applies nothing
            return
        for d in drafts:
            assert self.model.write(d.id or "", d.namespace, d.content, {})

    @rule(target=ids, old=ids, content=contents)
    def supersede(self, old: str, content: str) -> str:
        row = self.model.rows.get(old)
        memory_id = self._new_id()
        namespace = row.namespace if row is not None else "a"
        call = lambda: self.store.remember(  # noqa: E731
            content, id=memory_id, namespace=namespace, supersedes=[old]
        )
        if row is None or row.forgotten:
            with pytest.raises(embedmind.NotFoundError):
                call()
            return memory_id
        if row.superseded_by is not None:
            with pytest.raises(embedmind.InvalidInputError):
                call()
            return memory_id
        call()
        assert self.model.write(memory_id, namespace, content, {})
        row.superseded_by = memory_id
        self.model.edges.add((memory_id, "supersedes", old))
        return memory_id

    @rule(
        target=ids,
        other=ids,
        kind=st.sampled_from(KINDS),
        content=contents,
        namespace=st.sampled_from(NAMESPACES),
    )
    def relate(self, other: str, kind: str, content: str, namespace: str) -> str:
        memory_id = self._new_id()
        row = self.model.rows.get(other)
        call = lambda: self.store.remember(  # noqa: E731
            content, id=memory_id, namespace=namespace, relations=[(kind, other)]
        )
        if row is None or row.forgotten:
            with pytest.raises(embedmind.NotFoundError):
                call()
            return memory_id
        call()
        assert self.model.write(memory_id, namespace, content, {})
        self.model.edges.add((memory_id, kind, other))
        return memory_id

    @rule(memory_id=ids, content=contents)
    def redact(self, memory_id: str, content: str) -> None:
        row = self.model.rows.get(memory_id)
        if row is None or row.forgotten:
            with pytest.raises(embedmind.NotFoundError):
                self.store.redact(memory_id, content)
            return
        self.store.redact(memory_id, content)
        row.content = content

    @rule(memory_id=ids)
    def forget(self, memory_id: str) -> None:
        row = self.model.rows.get(memory_id)
        expected = row is not None and not row.forgotten
        assert self.store.forget(memory_id) is expected
        if expected and row is not None:
            row.forgotten = True

    @rule(memory_id=ids)
    def delete(self, memory_id: str) -> None:
        assert self.store.delete(memory_id) is (memory_id in self.model.rows)
        if memory_id in self.model.rows:
            self.model.drop(memory_id)

    @rule()
    def vacuum(self) -> None:
        report = self.store.vacuum()
        gone = [i for i, r in self.model.rows.items() if r.forgotten]
        assert report.removed == len(gone)
        for memory_id in gone:
            self.model.drop(memory_id)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        if self.index_file.exists():  # remembered, to come back later as a stale index
            shutil.copyfile(self.index_file, self.stash)
        self.store = self._open()

    @rule()
    def reopen_with_lost_index(self) -> None:
        self.store.close()
        self.index_file.unlink(missing_ok=True)
        self.store = self._open()

    @precondition(lambda self: self.stash.exists())
    @rule()
    def reopen_with_stale_index(self) -> None:
        self.store.close()
        shutil.copyfile(self.stash, self.index_file)
        self.store = self._open()

    @invariant()
    def listing_matches(self) -> None:
        everything = self.store.iter(include_forgotten=True, include_superseded=True)
        listed = {m.id: m for m in everything}
        assert set(listed) == set(self.model.rows)
        for memory_id, row in self.model.rows.items():
            m = listed[memory_id]
            got = (m.namespace, m.content, m.metadata, m.forgotten, m.superseded_by)
            assert got == (
                row.namespace, row.content, row.metadata, row.forgotten, row.superseded_by,
            )  # fmt: skip

    @invariant()
    def graph_matches(self) -> None:
        for memory_id, row in self.model.rows.items():
            if row.forgotten:
                continue
            want = {(t, k, True) for s, k, t in self.model.edges if s == memory_id}
            want |= {(s, k, False) for s, k, t in self.model.edges if t == memory_id}
            want = {e for e in want if not self.model.rows[e[0]].forgotten}
            got = {(r.memory.id, r.kind, r.outgoing) for r in self.store.related(memory_id)}
            assert got == want, memory_id

    @invariant()
    def text_recall_matches(self) -> None:
        findable = self.model.findable()
        for word in ("apple", "fox"):
            term = analyze(word)[0]
            expected = {i for i, r in findable.items() if term in analyze(r.content)}
            got = set(self.store.recall(word, mode="text", k=10_000).ids)
            assert got == expected
        live = sum(not r.forgotten for r in self.model.rows.values())
        stats = self.store.stats()
        assert (stats.live, stats.forgotten) == (live, len(self.model.rows) - live)

    @invariant()
    def vector_recall_matches_brute_force(self) -> None:
        findable = self.model.findable()
        if not findable:
            assert self.store.recall("apple fox", mode="vector", k=10).ids == []
            return
        ids = sorted(findable)
        matrix = np.stack([EMBEDDER.embed_query(findable[i].content) for i in ids])
        query = EMBEDDER.embed_query("apple fox golf")
        cosines = dict(zip(ids, matrix @ query, strict=True))
        k = min(10, len(ids))
        hits = self.store.recall("apple fox golf", mode="vector", k=k).ids
        assert set(hits) <= set(findable), "vector recall returned a memory it must not"
        # Tie-aware recall@k: a hit counts when its cosine reaches the k-th best (f16 slack).
        kth = sorted(cosines.values(), reverse=True)[k - 1]
        self.recall_hits += sum(cosines[i] >= kth - 2e-3 for i in hits)
        self.recall_wanted += k


RECALL: list[tuple[int, int]] = []


def test_store_matches_the_model(figures: Figures) -> None:
    RECALL.clear()
    StoreMachine.TestCase().runTest()
    hits, wanted = map(sum, zip(*RECALL, strict=True)) if RECALL else (0, 0)
    recall = hits / wanted if wanted else 1.0
    figures(runs=len(RECALL), vector_queries_k=wanted, ann_recall_at_10=round(recall, 4))
    assert wanted > 0
    assert recall >= MIN_RECALL
