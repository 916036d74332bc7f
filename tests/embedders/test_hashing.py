import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from embedmind.embedders import Embedder, HashingEmbedder


def test_identity_and_protocol() -> None:
    e = HashingEmbedder(dims=64)
    assert (e.model_id, e.dims, e.metric) == ("hashing-64", 64, "cos")
    assert isinstance(e, Embedder)
    assert e.fingerprint != HashingEmbedder(dims=32).fingerprint


def test_deterministic_across_processes() -> None:
    here = HashingEmbedder().embed_query("Alice prefers green tea").tobytes().hex()
    code = (
        "from embedmind.embedders import HashingEmbedder;"
        "print(HashingEmbedder().embed_query('Alice prefers green tea').tobytes().hex())"
    )
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    ).stdout.strip()
    assert here == there


def test_rows_unit_norm_float32_and_casefolded() -> None:
    e = HashingEmbedder()
    v = e.embed_documents(["Tea TIME", "tea time", "", "!!!"])
    assert v.dtype == np.float32
    assert v.shape == (4, 64)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(v[0], v[1])
    np.testing.assert_array_equal(v[2], v[3])  # no words: the fixed unit vector
    assert e.embed_documents([]).shape == (0, 64)


def test_shared_words_are_closer() -> None:
    e = HashingEmbedder()
    a, b, c = e.embed_documents(["green tea with alice", "alice drinks green tea", "xyz qrs"])
    assert a @ b > a @ c


def test_spans() -> None:
    e = HashingEmbedder(max_tokens=10)
    text = " ".join(f"w{i}" for i in range(35))
    spans = e.spans(text, overlap_tokens=2)
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    assert all(b[0] < a[1] for a, b in itertools.pairwise(spans))
    assert all(len(text[s:t].split()) <= 10 for s, t in spans)
    assert e.spans("") == [(0, 0)]
    assert len(e.spans(text)) > 1  # the default overlap is clamped to the window
    with pytest.raises(ValueError):
        e.spans(text, overlap_tokens=-1)
