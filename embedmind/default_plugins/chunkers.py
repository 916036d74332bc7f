"""The built-in chunkers, as a plugin."""

from __future__ import annotations

from collections.abc import Callable

from embedmind.chunking import BUILT_IN
from embedmind.hookspecs import hookimpl


@hookimpl
def register_chunkers(register: Callable[..., None]) -> None:
    """Register characters, words, sentences and paragraphs."""
    for name, chunker in BUILT_IN.items():
        register(name, chunker)
