"""The PostgreSQL backend as a plugin: ``register_backends`` for ``postgresql://`` URLs.

Registered through the ``embedmind`` entry-point group (``postgresql =
"embedmind.backend.postgres.plugin"``), exactly as a third-party backend would
be; importing this module imports no driver (the factory does, when it opens).
"""

from __future__ import annotations

from collections.abc import Callable

from embedmind.hookspecs import hookimpl


@hookimpl
def register_backends(register: Callable[..., None]) -> None:
    """Register the PostgreSQL backend for ``postgresql://`` and ``postgres://`` URLs."""
    try:  # the driver comes with `embedmind[postgres]`; without it, SQLite stores still open
        from embedmind.backend.postgres.backend import FACTORY
    except ImportError:
        return
    register("postgresql", FACTORY)
