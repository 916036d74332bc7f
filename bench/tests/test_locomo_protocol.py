"""LoCoMo's protocol: each turn written with its session as ``session_id``, in dialog order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from embedmind.embedders.hashing import HashingEmbedder
from embedmind_bench.locomo_data import load
from embedmind_bench.peer_engines import EmbedmindPeer


def _sample(path: Path) -> Path:
    def turn(dia: str, speaker: str, text: str) -> dict[str, str]:
        return {"dia_id": dia, "speaker": speaker, "text": text}

    # Keys out of order on purpose: the file's key order is not the dialog's.
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Ben",
        "session_2_date_time": "1:00 pm on 9 May, 2023",
        "session_2": [turn("D2:1", "Ann", "the hike was long"), turn("D2:2", "Ben", "how long")],
        "session_1_date_time": "10:00 am on 8 May, 2023",
        "session_1": [turn("D1:1", "Ann", "I got a dog"), turn("D1:2", "Ben", "what breed")],
    }
    qa = [{"question": "what pet?", "category": 4, "evidence": ["D1:1"]}]
    path.write_text(json.dumps([{"sample_id": "conv-9", "conversation": conversation, "qa": qa}]))
    return path


def test_turns_carry_their_session_in_dialog_order(tmp_path: Path) -> None:
    data = load(_sample(tmp_path / "locomo.json"))
    assert [d.id for d in data.drafts] == [
        "conv-9/D1:1", "conv-9/D1:2", "conv-9/D2:1", "conv-9/D2:2",
    ]  # fmt: skip
    assert [d.session_id for d in data.drafts] == ["conv-9:1", "conv-9:1", "conv-9:2", "conv-9:2"]
    stamps = [d.created_at for d in data.drafts]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_the_peers_benchmark_gives_embedmind_the_sessions(tmp_path: Path) -> None:
    data = load(_sample(tmp_path / "locomo.json"))
    peer = EmbedmindPeer(tmp_path, HashingEmbedder(8), vector_index_from=10**6)
    vectors = np.eye(4, 8, dtype=np.float32) + 0.1
    sessions = [(d.session_id or "", d.created_at) for d in data.drafts if d.created_at]
    ids = [d.id or "" for d in data.drafts]
    peer.add(ids, [d.content for d in data.drafts], vectors, ["c"] * 4, lambda n: n, sessions)
    store = peer.store
    assert [store.get(i).session_id for i in ids] == [s for s, _ in sessions]  # type: ignore[union-attr]
    assert [store.get(i).created_at for i in ids] == [c for _, c in sessions]  # type: ignore[union-attr]
    assert peer.settings["session_context"] is True
    # D1:2 ("what breed") is found through D1:1's words, its dialog neighbour.
    assert "conv-9/D1:2" in store.recall("dog", mode="text").ids
    peer.close()
