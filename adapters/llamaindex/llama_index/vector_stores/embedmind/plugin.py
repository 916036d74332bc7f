"""The embedmind entry point of this adapter: imports no LlamaIndex at module level."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from embedmind.hookspecs import hookimpl


@hookimpl
def register_adapters(register: Callable[..., None]) -> None:
    """Announce the LlamaIndex adapter and whether its framework is importable."""
    register(
        "llamaindex",
        framework="llama_index.core",
        available=importlib.util.find_spec("llama_index.core") is not None,
        module="llama_index.vector_stores.embedmind",
    )
