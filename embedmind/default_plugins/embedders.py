"""The embedded all-MiniLM-L6-v2 and the hashing test embedder, as plugins."""

from __future__ import annotations

from collections.abc import Callable

from embedmind.hookspecs import hookimpl


def _minilm() -> object:
    from embedmind.embedders.minilm import default_embedder

    return default_embedder()


def _hashing() -> object:
    from embedmind.embedders.hashing import HashingEmbedder

    return HashingEmbedder(64)


@hookimpl
def register_embedders(register: Callable[..., None]) -> None:
    """Register the built-in embedders."""
    register("all-MiniLM-L6-v2", _minilm, aliases=("default", "minilm"))
    register("hashing-64", _hashing, aliases=("hashing",))
