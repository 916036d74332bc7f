"""An error never loads plugins: the caller looks up the name a suggested command carries."""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest

import embedmind
from embedmind import errors
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.plugins import registered_name

_IDENTITY = {"model_id": "hashing-64", "dims": "64", "metric": "cos", "fingerprint": "f"}


def test_errors_imports_nothing_from_embedmind_not_even_inside_a_function() -> None:
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    modules = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    modules += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [m for m in modules if m.split(".")[0] == "embedmind"] == []


def test_registered_name_prefers_a_registered_model_id_over_the_fallback() -> None:
    assert registered_name("hashing-64") == "hashing-64"
    assert registered_name("hashing-64", "toy") == "hashing-64"
    assert registered_name("hashing-32", "toy") == "toy"  # a model id that no plugin registered
    assert registered_name("hashing-32") is None
    assert registered_name("", "toy") == "toy"


def test_the_message_uses_only_the_name_it_is_given() -> None:
    # A registered model id with no name: constructing the error looks nothing up.
    plain = str(errors.EmbedderMismatchError("p q", _IDENTITY, _IDENTITY))
    assert "call `embedmind.reembed('p q', embedder)` in Python" in plain
    named = str(errors.EmbedderMismatchError("p q", _IDENTITY, _IDENTITY, name="hashing-64"))
    assert f"`embedmind --store {shlex.quote('p q')} --embedder hashing-64 reembed`" in named


def test_reembed_names_a_registered_model_in_the_command_it_suggests(tmp_path: Path) -> None:
    path = str(tmp_path / "s s.mind")
    with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        store.remember("red apples")
    with pytest.raises(embedmind.EmbedderMismatchError) as caught:
        embedmind.reembed(path, "hashing", missing=True)  # hashing-64: a registered id
    assert caught.value.name == "hashing-64"
    assert f"--store {shlex.quote(path)} --embedder hashing-64 reembed" in str(caught.value)
