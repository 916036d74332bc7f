"""The reliability harness's crash points, at the path this backend's modules import them from.

They live in :mod:`embedmind.crashpoints` (the engine sets some too); one hit
counter serves both.
"""

from embedmind.crashpoints import crashpoint

__all__ = ["crashpoint"]
