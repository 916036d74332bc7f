"""``embedmind bench peers`` follows the LoCoMo protocol: every engine gets the same documents.

A fake engine records what it is given; two of them and embedmind run LoCoMo
on a small file through the benchmark's own path (``peers._locomo``), so a
peer handed other texts, vectors, order or sessions than embedmind, or
embedmind a turn without its session, fails here. The scores' standard
errors are checked against numpy and their means against the LoCoMo scorer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedmind.embedders.hashing import HashingEmbedder
from embedmind_bench import locomo_data, peer_engines, peers, peers_scoring
from embedmind_bench.locomo_data import Question
from embedmind_bench.peer_engines import EmbedmindPeer, Search, Session, Step
from embedmind_bench.progress import silent
from embedmind_bench.report import Outcome
from embedmind_bench.vectordata import Matrix


def _sample(path: Path) -> Path:
    """Two conversations, their session keys out of order, three sessions in one."""

    def turn(dia: str, speaker: str, text: str) -> dict[str, str]:
        return {"dia_id": dia, "speaker": speaker, "text": text}

    one = {
        "speaker_a": "Ann",
        "speaker_b": "Ben",
        "session_3_date_time": "9:00 am on 1 June, 2023",
        "session_3": [turn("D3:1", "Ann", "we moved to Lisbon"), turn("D3:2", "Ben", "nice")],
        "session_1_date_time": "10:00 am on 8 May, 2023",
        "session_1": [turn("D1:1", "Ann", "I got a dog"), turn("D1:2", "Ben", "what breed")],
        "session_2_date_time": "1:00 pm on 9 May, 2023",
        "session_2": [turn("D2:1", "Ann", "a beagle"), turn("D2:2", "Ben", "cute")],
    }
    two = {
        "speaker_a": "Cy",
        "speaker_b": "Di",
        "session_1_date_time": "8:00 pm on 2 March, 2022",
        "session_1": [turn("D1:1", "Cy", "I paint"), turn("D1:2", "Di", "oil or water?")],
    }
    samples = [
        {
            "sample_id": "conv-1",
            "conversation": one,
            "qa": [
                {"question": "what dog?", "category": 4, "evidence": ["D2:1"]},
                {"question": "where do they live?", "category": 1, "evidence": ["D3:2", "D1:1"]},
            ],
        },
        {
            "sample_id": "conv-2",
            "conversation": two,
            "qa": [{"question": "what does Cy do?", "category": 3, "evidence": ["D1:1"]}],
        },
    ]
    path.write_text(json.dumps(samples))
    return path


@dataclasses.dataclass
class Received:
    """What one engine was given."""

    ids: list[str]
    texts: list[str]
    vectors: Matrix
    scopes: list[str]
    sessions: list[Session] | None


class FakePeer:
    """Records its documents; answers with its scope's ids in the order given."""

    seen: ClassVar[dict[str, Received]] = {}

    def __init__(self, root: Path, embedder: Any, *, vector_index_from: int) -> None:
        del embedder, vector_index_from
        self.name = root.name
        self.settings: dict[str, Any] = {}

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
    ) -> None:
        got = Received(
            list(ids), list(texts), np.array(vectors), list(scopes), list(sessions or []) or None
        )
        FakePeer.seen[self.name] = got
        step(len(ids))

    def finish(self) -> None:
        """Nothing to build."""

    def modes(self) -> dict[str, Search]:
        def run(text: str, vector: Matrix, scope: str | None, k: int) -> list[str]:
            got = FakePeer.seen[self.name]
            return [i for i, s in zip(got.ids, got.scopes, strict=True) if s == scope][:k]

        return {"vector": run}

    def close(self) -> None:
        """Nothing to release."""


class RecordingEmbedmind(EmbedmindPeer):
    """embedmind as the benchmark runs it, noting each memory's session before closing."""

    stored: ClassVar[dict[str, tuple[str | None, Any]]] = {}

    def close(self) -> None:
        for memory_id in FakePeer.seen["fake-a"].ids:
            memory = self.store.get(memory_id)
            assert memory is not None
            RecordingEmbedmind.stored[memory_id] = (memory.session_id, memory.created_at)
        super().close()


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Outcome, locomo_data.Dataset]:
    FakePeer.seen, RecordingEmbedmind.stored = {}, {}
    monkeypatch.setitem(peer_engines.ENGINES, "fake-a", FakePeer)
    monkeypatch.setitem(peer_engines.ENGINES, "fake-b", FakePeer)
    monkeypatch.setitem(peer_engines.ENGINES, "embedmind", RecordingEmbedmind)
    path = _sample(tmp_path / "locomo.json")
    options = peers.Options(engines=("fake-a", "embedmind", "fake-b"), data=path, warmup=0)
    context = {
        "embedder": HashingEmbedder(16),
        "progress": silent,
        "workdir": tmp_path / "work",
        "index_from": 10**6,
    }
    outcome = Outcome()
    peers._locomo(options, context, outcome)
    return outcome, locomo_data.load(path)


def test_every_engine_gets_the_same_documents_in_dialog_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome, data = _run(tmp_path, monkeypatch)
    a, b = FakePeer.seen["fake-a"], FakePeer.seen["fake-b"]
    assert a.ids == b.ids == [d.id for d in data.drafts]
    assert a.ids[:6] == [f"conv-1/D{s}:{t}" for s in (1, 2, 3) for t in (1, 2)]  # dialog order
    assert a.texts == b.texts == [d.content for d in data.drafts]
    assert a.scopes == b.scopes == [d.namespace for d in data.drafts]
    np.testing.assert_array_equal(a.vectors, b.vectors)
    np.testing.assert_array_equal(a.vectors, HashingEmbedder(16).embed_documents(a.texts))
    expected = [(d.session_id, d.created_at) for d in data.drafts]
    assert a.sessions == b.sessions == expected
    # embedmind stored the same turns, each with its own session and time.
    assert RecordingEmbedmind.stored == dict(zip(a.ids, expected, strict=True))
    assert outcome.figures["locomo"]["engines"]["embedmind"]["settings"]["session_context"]
    assert outcome.figures["locomo"]["sessions"] == 4 and outcome.figures["locomo"]["turns"] == 8


def test_the_report_names_every_mode_with_standard_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome, _ = _run(tmp_path, monkeypatch)
    methods = outcome.figures["locomo"]["methods"]
    assert set(methods) == {
        "fake-a (vector)",
        "fake-b (vector)",
        "embedmind (text)",
        "embedmind (vector)",
        "embedmind (hybrid)",
    }
    overall = methods["fake-a (vector)"]["scores"]["overall"]
    # The fake answers with its scope's turns in order: D3:2 is 6th, D1:1 1st.
    assert overall["questions"] == 3 and overall["hit@10"] == 1.0 and overall["hit@10_se"] == 0
    assert overall["recall@5"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert methods["embedmind (hybrid)"]["latency"]["p95_ms"] is not None
    rendered = outcome.tables[0].render()
    assert "±" in rendered and "p95 ms" in rendered and "embedmind (text)" in rendered


def test_a_turn_without_its_session_is_refused(tmp_path: Path) -> None:
    data = locomo_data.load(_sample(tmp_path / "locomo.json"))
    data.drafts[3] = dataclasses.replace(data.drafts[3], session_id=None)
    # Dropping it would shift every later turn's session onto its neighbour.
    with pytest.raises(ValueError, match="conv-1/D2:2 has no session"):
        peers.locomo_corpus(data, HashingEmbedder(16))


_RANKED = st.lists(
    st.tuples(
        st.sampled_from([1, 2, 3, 4]),
        st.sets(st.sampled_from("abcdef"), min_size=1, max_size=3),
        st.lists(st.sampled_from("abcdefghijkl"), max_size=12, unique=True),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(_RANKED)
def test_scores_are_the_locomo_means_with_numpy_standard_errors(ranked: list[Any]) -> None:
    pairs = [(Question("ns", "q", c, frozenset(e)), ids) for c, e, ids in ranked]
    ours = peers_scoring.score(pairs)
    theirs = locomo_data.score(pairs)
    assert set(ours) == set(theirs)
    for group, row in theirs.items():
        members = [
            (q, ids) for q, ids in pairs if group in ("overall", locomo_data.CATEGORIES[q.category])
        ]
        for name, value in row.items():
            assert ours[group][name] == pytest.approx(value)
        values = [1.0 if set(ids[:10]) & q.evidence else 0.0 for q, ids in members]
        error = np.std(values, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
        assert ours[group]["hit@10_se"] == pytest.approx(error)


def test_every_engines_files_are_read_before_the_first_timed_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engines are built in turn: without the read, the first built answers
    # from pages the OS may have dropped while the others were built.
    read: list[str] = []
    read_when_asked: list[list[str]] = []
    real_read, real_round_robin = peers.read_files, peers.round_robin

    def reading(root: Path) -> int:
        read.append(root.name)
        return real_read(root)

    def asking(*args: Any, **kwargs: Any) -> Any:
        read_when_asked.append(list(read))
        return real_round_robin(*args, **kwargs)

    monkeypatch.setattr(peers, "read_files", reading)
    monkeypatch.setattr(peers, "round_robin", asking)
    _run(tmp_path, monkeypatch)
    assert read_when_asked == [["fake-a", "embedmind", "fake-b"]]
