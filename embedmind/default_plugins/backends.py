"""The built-in SQLite backend, registered as a plugin (as a third-party backend would be)."""

from __future__ import annotations

from collections.abc import Callable

from embedmind.hookspecs import hookimpl


@hookimpl
def register_backends(register: Callable[..., None]) -> None:
    """Register the SQLite backend for file paths and ``":memory:"``."""
    from embedmind.backend.sqlite.backend import FACTORY  # imported when the registry loads

    register("sqlite", FACTORY)
