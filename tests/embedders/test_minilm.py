"""The default MiniLM embedder: quality, batch invariance, identity, windows."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

WORDS = (
    "alice bob prefers green tea coffee meeting tomorrow project deadline report budget "
    "berlin paris station friday slides review call remind weather dinner book flight"
).split()


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60))) for _ in range(n)]


def test_identity(minilm: Any) -> None:
    from embedmind.embedders import Embedder

    assert (minilm.model_id, minilm.dims, minilm.metric, minilm.max_tokens) == (
        "all-MiniLM-L6-v2",
        384,
        "cos",
        256,
    )
    assert minilm.variant == "int8"
    assert len(minilm.fingerprint) == 64
    assert len(minilm.weights_sha256) == 64
    assert isinstance(minilm, Embedder)


def test_reference_vectors(minilm: Any, reference: dict[str, Any]) -> None:
    got = minilm.embed_documents(reference["sentences"])
    want = np.asarray(reference["vectors"], dtype=np.float32)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.99, cosines


def test_published_similarity(minilm: Any) -> None:
    a, b = minilm.embed_documents(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(a @ b) == pytest.approx(0.755, abs=0.02)


def test_rows_are_unit_float32(minilm: Any) -> None:
    v = minilm.embed_documents(["", "ok", "x " * 5000, "日本語のテキスト"])
    assert v.dtype == np.float32
    assert v.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    q = minilm.embed_query("ok")
    assert q.dtype == np.float32
    assert q.shape == (384,)
    assert minilm.embed_documents([]).shape == (0, 384)


def test_batch_invariance(minilm: Any) -> None:
    texts = _texts(12, seed=1)
    alone = np.stack([minilm.embed_query(t) for t in texts])
    noise = [*_texts(40, seed=2), "word " * 400]
    rng = random.Random(3)
    for _ in range(3):
        mixed = texts + rng.sample(noise, 20)
        rng.shuffle(mixed)
        got = minilm.embed_documents(mixed)
        rows = np.stack([got[mixed.index(t)] for t in texts])
        assert (rows * alone).sum(axis=1).min() >= 0.9999


def test_spans_cover_text_and_fit_window(minilm: Any) -> None:
    from embedmind.embedders.wordpiece import WordPiece

    text = " ".join(_texts(60, seed=4)) + " unbelievably " * 50
    spans = minilm.spans(text)
    assert len(spans) > 2
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    assert all(b[0] < a[1] for a, b in itertools.pairwise(spans))  # overlapping, no gap
    tokenizer = WordPiece(256)
    assert all(len(tokenizer.ids(text[s:e])) <= 256 for s, e in spans)
    assert all(tokenizer._tok.encode(text[s:e]).overflowing == [] for s, e in spans)
    assert minilm.spans("") == [(0, 0)]
    assert minilm.spans("short text") == [(0, 10)]


def test_embed_spans_embeds_the_slices(minilm: Any) -> None:
    text = " ".join(_texts(30, seed=5))
    chunks = minilm.embed_spans(text)
    assert len(chunks) > 1
    start, end, vector = chunks[1]
    np.testing.assert_allclose(vector, minilm.embed_query(text[start:end]), atol=1e-6)


def test_import_has_no_side_effects() -> None:
    code = (
        "import sys, embedmind.embedders as e; "
        "assert not {'onnxruntime', 'onnx', 'tokenizers'} & set(sys.modules), sys.modules.keys()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
