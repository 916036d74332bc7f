"""The embedmind entry point of this adapter: imports no LangChain at module level."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from embedmind.hookspecs import hookimpl


@hookimpl
def register_adapters(register: Callable[..., None]) -> None:
    """Announce the LangChain adapter and whether its framework is importable."""
    register(
        "langchain",
        framework="langchain_core",
        available=importlib.util.find_spec("langchain_core") is not None,
        module="langchain_embedmind",
    )
