"""The hooks plugins implement (pluggy project ``embedmind``). Markers and specs only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("embedmind")
hookimpl = pluggy.HookimplMarker("embedmind")


@hookspec
def register_embedders(register: Callable[..., None]) -> None:
    """Register embedder factories: ``register(name, factory, *, aliases=())``.

    ``factory()`` returns an embedder; ``Store.open(embedder=name)`` resolves
    a name or alias to it.
    """


@hookspec
def register_chunkers(register: Callable[..., None]) -> None:
    """Register chunkers: ``register(name, chunker, *, aliases=())``.

    A chunker is ``(text, window, overlap) -> [(start, end), ...]``.
    """


@hookspec
def register_adapters(register: Callable[..., None]) -> None:
    """Announce an adapter: ``register(name, framework=..., available=..., module=...)``."""


@hookspec
def records_committed(store: Any, events: Sequence[Any]) -> None:
    """Called after a write transaction commits (never on rollback) with its events."""


@hookspec(firstresult=True)
def rerank(query: str, hits: Sequence[Any]) -> Sequence[Any] | None:
    """Return the hits in a new order (or ``None`` to leave them); the first answer wins."""


@hookspec
def register_backends(register: Callable[..., None]) -> None:
    """Register storage backends: ``register(name, factory, *, aliases=())``.

    ``factory`` follows :class:`embedmind.backend.protocol.BackendFactory`: it
    ``claims(location)`` the paths or URLs it opens and ``open(options)``s them;
    ``Store.open`` asks the factories in registration order. The built-in
    SQLite backend registers here too and claims every location that is not a
    URL (``"memories.mind"``, ``":memory:"``).
    """
