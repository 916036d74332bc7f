"""The base of :class:`embedmind.Store`'s method groups: the one attribute they all reach.

The public methods are grouped by room (``store_writes``, ``store_reads``...)
only so that each file stays small; each method is its signature, its public
docstring and one call into :mod:`embedmind.engine`. They share nothing but
:attr:`Facade._engine`, declared here once, so the order of
:class:`embedmind.Store`'s bases changes nothing.
"""

from __future__ import annotations

from embedmind.engine.state import Engine


class Facade:
    """Declares the store's :class:`~embedmind.engine.state.Engine`."""

    _engine: Engine
