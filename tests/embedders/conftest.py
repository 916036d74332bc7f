"""Shared fixtures: one MiniLM embedder per session, its cache under a temp dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REFERENCE = (
    Path(__file__).parents[2].parent
    / "shared"
    / "data"
    / "models"
    / "all-MiniLM-L6-v2"
    / "reference_vectors.json"
)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedmind-cache")


@pytest.fixture(scope="session")
def minilm(model_cache: Path) -> Any:
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from embedmind.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder(cache_dir=model_cache, threads=2, batch_size=16)
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    if not REFERENCE.is_file():
        pytest.skip(f"reference vectors not found at {REFERENCE} (they live outside the repo)")
    data: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data
