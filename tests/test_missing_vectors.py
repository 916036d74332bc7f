"""Memories written without vectors into a store that has vectors: reported, then filled."""

from __future__ import annotations

import importlib
import logging
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

reembed_module = importlib.import_module("embedmind.reembed")

_NOTE = re.compile(r"^(\d+) memor(?:y|ies) in scope ha(?:s|ve) no vector")


def _model() -> HashingEmbedder:
    return HashingEmbedder(32)


def _missing_in_note(result: embedmind.Recall) -> int:
    """The count the missing-vector note of ``result`` gives (0 without one)."""
    counts = [int(m.group(1)) for note in result.degraded if (m := _NOTE.match(note))]
    assert len(counts) <= 1, result.degraded
    return counts[0] if counts else 0


def _mixed_store(path: Path) -> tuple[list[str], list[str]]:
    """Three memories with vectors, then four written with ``embedder=None``."""
    with embedmind.Store.open(path, embedder=_model()) as store:
        embedded = [store.remember(f"tea note {i}", namespace="kept").id for i in range(3)]
    with embedmind.Store.open(path, embedder=None) as store:
        bare = [store.remember(f"coffee note {i}", namespace="bare").id for i in range(3)]
        bare.append(store.remember("tea latecomer", namespace="kept").id)
    return embedded, bare


def test_writes_without_an_embedder_are_counted_after_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.mind"
    _, bare = _mixed_store(path)
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().missing_vectors == len(bare)
        assert _missing_in_note(store.recall("coffee", mode="vector")) == 4
        assert _missing_in_note(store.recall("coffee", mode="hybrid")) == 4
        # Per scope: only the searched namespaces count.
        assert _missing_in_note(store.recall("tea", namespace="kept")) == 1
        assert _missing_in_note(store.recall("coffee", namespace="bare/*")) == 3
        assert _missing_in_note(store.recall("tea", namespace="elsewhere")) == 0
        # Text recall never needed vectors: no note.
        assert _missing_in_note(store.recall("coffee", mode="text")) == 0
        assert "coffee note 0" not in [h.content for h in store.recall("coffee", mode="vector")]


def test_reembed_missing_fills_exactly_those(tmp_path: Path) -> None:
    path = tmp_path / "m.mind"
    embedded, bare = _mixed_store(path)
    with embedmind.Store.open(path, embedder=_model()) as store:
        before = store.vectors(embedded)
        assert store.vectors(bare) == {}
    assert embedmind.reembed(path, _model(), missing=True, batch_size=2) == len(bare)
    assert embedmind.reembed(path, _model(), missing=True) == 0  # nothing left: a no-op
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().missing_vectors == 0
        assert store.stats().vectors == len(embedded) + len(bare)
        after = store.vectors(embedded + bare)
        assert set(after) == set(embedded + bare)
        for memory_id in embedded:  # the others were left alone, bit for bit
            assert after[memory_id].tobytes() == before[memory_id].tobytes()
        result = store.recall("coffee note 1", mode="vector", k=1)
        assert result.hits[0].content == "coffee note 1"
        assert _missing_in_note(result) == 0


def test_reembed_missing_resumes_after_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.mind"
    with embedmind.Store.open(path, embedder=_model()) as store:
        store.remember("seed")
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many([f"bare {i}" for i in range(10)])
    calls = {"n": 0}
    real = reembed_module.embed_contents

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("killed mid-way")
        return real(*args, **kwargs)

    monkeypatch.setattr(reembed_module, "embed_contents", flaky)
    with pytest.raises(RuntimeError):
        embedmind.reembed(path, _model(), missing=True, batch_size=3)
    monkeypatch.setattr(reembed_module, "embed_contents", real)
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().missing_vectors == 4  # two batches of three committed
    assert embedmind.reembed(path, _model(), missing=True, batch_size=3) == 4
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().missing_vectors == 0


def test_reembed_missing_refuses_another_model(tmp_path: Path) -> None:
    path = tmp_path / "m.mind"
    _mixed_store(path)
    with pytest.raises(embedmind.EmbedderMismatchError):
        embedmind.reembed(path, HashingEmbedder(64), missing=True)
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().missing_vectors == 4  # nothing was written


def test_reembed_missing_refuses_an_unfinished_full_reembed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.mind"
    _mixed_store(path)

    def killed(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("killed")

    monkeypatch.setattr(reembed_module, "embed_contents", killed)
    with pytest.raises(RuntimeError):
        embedmind.reembed(path, HashingEmbedder(64))
    monkeypatch.undo()
    with pytest.raises(embedmind.ConflictError, match="unfinished re-embed"):
        embedmind.reembed(path, _model(), missing=True)


def test_a_text_only_store_reports_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many(["tea", "coffee"])
        assert store.stats().missing_vectors == 0
        result = store.recall("tea")
        assert _missing_in_note(result) == 0
        assert store.stats().embedder is None


def test_a_text_only_store_given_a_model_later_counts_its_old_memories(tmp_path: Path) -> None:
    # Its memories predate the model, so vector search cannot find them either.
    path = tmp_path / "t.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many(["tea", "coffee"])
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().missing_vectors == 2
        assert _missing_in_note(store.recall("tea", mode="vector")) == 2
    assert embedmind.reembed(path, _model(), missing=True) == 2
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.recall("tea", mode="vector", k=1).hits[0].content == "tea"


def test_reembed_missing_gives_a_model_to_a_store_that_never_had_one(tmp_path: Path) -> None:
    path = tmp_path / "t.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember_many(["tea", "coffee"])
    assert embedmind.reembed(path, _model(), missing=True) == 2
    with embedmind.Store.open(path, embedder=_model()) as store:
        assert store.stats().embedder == "hashing-32"
        assert store.stats().missing_vectors == 0


def test_writing_without_an_embedder_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.mind"
    with embedmind.Store.open(path, embedder=_model()) as store:
        store.remember("seed")
    with (
        caplog.at_level(logging.WARNING, logger="embedmind"),
        embedmind.Store.open(path, embedder=None) as store,
    ):
        store.remember("one")
        store.remember_many(["two", "three"])
        store.remember_detailed("four")
    warned = [r for r in caplog.records if "embedder=None" in r.getMessage()]
    assert len(warned) == 1
    assert "reembed --missing" in warned[0].getMessage()


def test_a_text_only_store_never_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="embedmind"),
        embedmind.Store.open(tmp_path / "t.mind", embedder=None) as store,
    ):
        store.remember("one")
    assert not [r for r in caplog.records if "embedder=None" in r.getMessage()]


_CONTENTS = st.sampled_from(["tea", "coffee", "green tea", "black coffee", "water"])
_IDS = st.sampled_from([f"id{i}" for i in range(6)])


class MissingVectorsMachine(RuleBasedStateMachine):
    """Two handles on one file, one with the model and one without, against a brute-force oracle.

    The handle with the model caches which memories lack vectors across its
    recalls; the other handle's writes (as another process's would) must
    reach that cache: the note's count always equals what the oracle counts.
    """

    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        path = Path(self._dir.name) / "m.mind"
        self.modelled = embedmind.Store.open(path, embedder=_model(), synchronous="NORMAL")
        self.bare = embedmind.Store.open(path, embedder=None, synchronous="NORMAL")
        self.path = path
        self.live: set[str] = set()

    @rule(memory_id=_IDS, content=_CONTENTS, with_model=st.booleans())
    def write(self, memory_id: str, content: str, with_model: bool) -> None:
        (self.modelled if with_model else self.bare).remember(content, id=memory_id)
        self.live.add(memory_id)

    @rule(memory_id=_IDS)
    def forget(self, memory_id: str) -> None:
        self.modelled.forget(memory_id)
        self.live.discard(memory_id)

    @rule(memory_id=_IDS)
    def delete(self, memory_id: str) -> None:
        self.bare.delete(memory_id)
        self.live.discard(memory_id)

    @precondition(lambda self: self.live)
    @rule()
    def fill(self) -> None:
        embedmind.reembed(self.path, _model(), missing=True)

    @invariant()
    def reported_matches_the_oracle(self) -> None:
        ids = sorted(self.live)
        expected = len(ids) - len(self.modelled.vectors(ids))
        result = self.modelled.recall("tea coffee water", mode="vector")
        assert _missing_in_note(result) == expected
        assert self.modelled.stats().missing_vectors == expected

    def teardown(self) -> None:
        self.bare.close()
        self.modelled.close()
        self._dir.cleanup()


MissingVectorsMachine.TestCase.settings = settings(
    settings.default, max_examples=25, stateful_step_count=30
)
test_missing_vectors_machine = MissingVectorsMachine.TestCase
