"""The store against a plain-Python model, across writes, deletes and reopen."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

import embedmind
from embedmind import Draft
from embedmind.lexical.analyzer import analyze

WORDS = ["apple", "banana", "cherry", "delta", "echo", "fox", "golf", "hotel", "india", "juliet"]
NAMESPACES = ["a", "a/b", "a/bc", "z"]

contents = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
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


@dataclass
class Model:
    rows: dict[str, Row] = field(default_factory=dict)

    def write(self, memory_id: str, namespace: str, content: str, meta: dict[str, object]) -> bool:
        existing = self.rows.get(memory_id)
        if existing is not None and existing.namespace != namespace:
            return False
        self.rows[memory_id] = Row(namespace, content, meta)
        return True


class StoreMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="embedmind-sm-"))
        self.path = self.dir / "s.mind"
        self.store = embedmind.Store.open(self.path, embedder=None, synchronous="NORMAL")
        self.model = Model()
        self.counter = 0

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(target=ids, content=contents, namespace=st.sampled_from(NAMESPACES), meta=metadata)
    def remember_new(self, content: str, namespace: str, meta: dict[str, object]) -> str:
        self.counter += 1
        memory_id = f"id-{self.counter}"
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
            self.counter += 1
            meta: dict[str, object] = {"x": float("nan")} if bad else {}
            drafts.append(
                Draft(content, id=f"id-{self.counter}", namespace=namespace, metadata=meta)
            )
        try:
            self.store.remember_many(drafts, batch_size=4)
        except embedmind.InvalidInputError:
            assert any(bad for *_, bad in batch)  # a bad item applies nothing
            return
        for d in drafts:
            assert self.model.write(d.id or "", d.namespace, d.content, {})

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
        self.model.rows.pop(memory_id, None)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = embedmind.Store.open(self.path, embedder=None, synchronous="NORMAL")

    @invariant()
    def listing_matches(self) -> None:
        listed = {m.id: m for m in self.store.iter(include_forgotten=True)}
        assert set(listed) == set(self.model.rows)
        for memory_id, row in self.model.rows.items():
            m = listed[memory_id]
            assert (m.namespace, m.content, m.metadata, m.forgotten) == (
                row.namespace, row.content, row.metadata, row.forgotten,
            )  # fmt: skip

    @invariant()
    def text_recall_matches(self) -> None:
        for word in ("apple", "fox"):
            term = analyze(word)[0]
            expected = {
                i
                for i, r in self.model.rows.items()
                if not r.forgotten and term in analyze(r.content)
            }
            got = set(self.store.recall(word, mode="text", k=10_000).ids)
            assert got == expected
        live = sum(not r.forgotten for r in self.model.rows.values())
        stats = self.store.stats()
        assert (stats.live, stats.forgotten) == (live, len(self.model.rows) - live)


TestStoreMachine = StoreMachine.TestCase
