"""Rebuilt-graph caching, cache location and the fallback to the shipped graph."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from embedmind.embedders import MiniLMEmbedder, prepare
from embedmind.embedders.cache import atomic_write, cache_dir


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EMBEDMIND_CACHE_DIR", str(tmp_path / "a"))
    assert cache_dir() == tmp_path / "a"
    monkeypatch.delenv("EMBEDMIND_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "embedmind"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "embedmind"


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.bin"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["f.bin"]


def _no_rebuild(*args: Any) -> bytes:
    raise AssertionError("the cached graph should have been reused")


def test_second_construction_reuses_cache(
    minilm: Any, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = minilm.graph.path
    assert path.parent == model_cache
    assert path.is_file()
    before = path.stat().st_mtime_ns
    monkeypatch.setattr(prepare, "rebuild_bytes", _no_rebuild)
    again = MiniLMEmbedder(cache_dir=model_cache, threads=1)
    assert again.graph.path == path
    assert again.variant == "int8"
    assert path.stat().st_mtime_ns == before
    assert again.fingerprint == minilm.fingerprint


def test_corrupt_cache_file_is_rebuilt(tmp_path: Path) -> None:
    first = MiniLMEmbedder(cache_dir=tmp_path, threads=1)
    first.graph.path.write_bytes(b"not an onnx file")
    second = MiniLMEmbedder(cache_dir=tmp_path, threads=1)
    assert second.variant == "int8"
    np.testing.assert_allclose(second.embed_query("tea"), first.embed_query("tea"), atol=1e-6)


def test_unusable_rebuild_falls_back_to_shipped_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    first = MiniLMEmbedder(cache_dir=tmp_path, threads=1)
    first.graph.path.write_bytes(b"not an onnx file")
    monkeypatch.setattr(prepare, "rebuild_bytes", lambda *args: b"still not an onnx file")
    with caplog.at_level(logging.WARNING, logger="embedmind.embedders.minilm"):
        shipped = MiniLMEmbedder(cache_dir=tmp_path, threads=1)
    assert shipped.variant == "shipped"
    assert "cached graph" in caplog.text
    assert "rebuilt graph" in caplog.text
    assert list(tmp_path.iterdir()) == []  # neither unusable graph is left to be loaded again
    # Two quantisations of one model: close, not equal, and how close depends on
    # the CPU's int8 kernels (0.9886 for "tea" on one x86-64 machine, > 0.99 on another).
    assert shipped.embed_query("tea") @ first.embed_query("tea") > 0.98


def _fail(*args: Any) -> bytes:
    raise ImportError("No module named 'onnx'")


def test_falls_back_to_shipped_graph(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    minilm: Any,
) -> None:
    monkeypatch.setattr(prepare, "rebuild_bytes", _fail)
    with caplog.at_level(logging.WARNING, logger="embedmind.embedders.prepare"):
        shipped = MiniLMEmbedder(cache_dir=tmp_path, threads=1)
    assert shipped.variant == "shipped"
    assert "shipped graph" in caplog.text
    assert shipped.fingerprint != minilm.fingerprint
    assert shipped.weights_sha256 == minilm.weights_sha256
    a, b = shipped.embed_documents(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(a @ b) == pytest.approx(0.755, abs=0.02)
    assert list(tmp_path.iterdir()) == []


def test_fp32_variant_matches_reference(tmp_path: Path, reference: dict[str, Any]) -> None:
    fp32 = MiniLMEmbedder(variant="fp32", cache_dir=tmp_path, threads=2)
    got = fp32.embed_documents(reference["sentences"])
    want = np.asarray(reference["vectors"], dtype=np.float32)
    assert (got * want).sum(axis=1).min() >= 0.999
    with pytest.raises(ValueError, match="variant"):
        MiniLMEmbedder(variant="fp16")
