"""Read requests as values: the ``where`` language, namespace scopes and selections.

Parsed and validated once in the engine; each backend compiles them to its own
query language. Nothing here knows SQL.
"""

from embedmind.query.scope import Scope
from embedmind.query.selection import Selection
from embedmind.query.where import All, AnyOf, Clause, Not, Test, parse_where

__all__ = ["All", "AnyOf", "Clause", "Not", "Scope", "Selection", "Test", "parse_where"]
