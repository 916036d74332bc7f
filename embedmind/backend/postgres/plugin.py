"""The PostgreSQL backend as a plugin: ``register_backends`` for ``postgresql://`` URLs.

Registered through the ``embedmind`` entry-point group (``postgresql =
"embedmind.backend.postgres.plugin"``), exactly as a third-party backend would
be. The registry loads this module in every process that opens a store, so it
imports neither the driver nor the backend: the factory it registers claims
URLs by their scheme, and libpq ``key=value`` strings
(:func:`embedmind.backend.locations.looks_like_libpq`), and imports the
backend when a PostgreSQL store opens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from embedmind.backend.locations import looks_like_libpq
from embedmind.errors import InvalidInputError
from embedmind.hookspecs import hookimpl

if TYPE_CHECKING:
    from embedmind.backend.protocol import Backend
    from embedmind.backend.values import OpenOptions

SCHEMES = ("postgresql", "postgres")


def claims(location: str) -> bool:
    """Whether ``location`` is a ``postgresql://`` or ``postgres://`` URL, or a libpq string.

    A libpq ``key=value`` string (``"host=db dbname=prod user=app"``, the form
    psycopg takes) is claimed whole, even when malformed: opening it then says
    what is wrong, where a file path would create a file named after it.
    """
    scheme, sep, _ = location.partition("://")
    if sep:
        return scheme.lower() in SCHEMES
    return looks_like_libpq(location)


class DeferredFactory:
    """The PostgreSQL factory: claims URLs here, imports the backend (and psycopg) to open one."""

    name = "postgresql"
    schemes: tuple[str, ...] = SCHEMES

    def claims(self, location: str) -> bool:
        """``postgresql://...`` and ``postgres://...`` URLs, and libpq ``key=value`` strings."""
        return claims(location)

    def open(self, options: OpenOptions) -> Backend:
        """Open through :func:`embedmind.backend.postgres.backend.open_backend`.

        Raises:
            InvalidInputError: When the driver is not installed (the fix:
                ``pip install 'embedmind[postgres]'``).
        """
        try:
            from embedmind.backend.postgres.backend import open_backend
        except ImportError as e:
            raise InvalidInputError(
                "location",
                f"a PostgreSQL store needs the driver ({e.name or 'psycopg'} is not installed): "
                "pip install 'embedmind[postgres]'",
            ) from e
        return open_backend(options)

    def exists(self, location: str) -> bool:
        """Whether the URL's schema holds a store (any migration applied)."""
        try:
            from embedmind.backend.postgres.backend import store_exists
        except ImportError:
            return False  # open() names the missing driver
        return store_exists(location)


FACTORY = DeferredFactory()
"""What :func:`register_backends` registers."""


@hookimpl
def register_backends(register: Callable[..., None]) -> None:
    """Register the PostgreSQL backend for ``postgresql://`` and ``postgres://`` URLs."""
    register("postgresql", FACTORY)
