"""embedmind: an embedded long-term memory engine for LLM stacks.

The errors load with the package; :class:`Store`, :func:`reembed` and the
result types load on first use (:func:`__getattr__`), so ``import embedmind``
and the command line's ``--help`` import neither numpy nor a backend.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from embedmind.errors import (
    ConflictError,
    DamagedRecordError,
    EmbedderError,
    EmbedderMismatchError,
    EmbedmindError,
    FilterTypeError,
    InvalidFilterError,
    InvalidInputError,
    NotFoundError,
    RedactionIncompleteError,
    SchemaVersionError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
)

if TYPE_CHECKING:
    from embedmind.model import (
        AgentStats,
        ChannelScore,
        Draft,
        Hit,
        Level,
        Memory,
        Mode,
        Recall,
        Remembered,
        SimilarMemory,
        Stats,
        Tier,
    )
    from embedmind.reembed import reembed
    from embedmind.store import Store

__version__ = "0.1.0"

__all__ = [
    "AgentStats",
    "ChannelScore",
    "ConflictError",
    "DamagedRecordError",
    "Draft",
    "EmbedderError",
    "EmbedderMismatchError",
    "EmbedmindError",
    "FilterTypeError",
    "Hit",
    "InvalidFilterError",
    "InvalidInputError",
    "Level",
    "Memory",
    "Mode",
    "NotFoundError",
    "Recall",
    "RedactionIncompleteError",
    "Remembered",
    "SchemaVersionError",
    "SimilarMemory",
    "Stats",
    "StorageError",
    "Store",
    "StoreBusyError",
    "StoreClosedError",
    "Tier",
    "__version__",
    "reembed",
]

# Where each name that loads on first use lives.
_LAZY = {
    "Store": "embedmind.store",
    "reembed": "embedmind.reembed",
    "AgentStats": "embedmind.model",
    "ChannelScore": "embedmind.model",
    "Draft": "embedmind.model",
    "Hit": "embedmind.model",
    "Level": "embedmind.model",
    "Memory": "embedmind.model",
    "Mode": "embedmind.model",
    "Recall": "embedmind.model",
    "Remembered": "embedmind.model",
    "SimilarMemory": "embedmind.model",
    "Stats": "embedmind.model",
    "Tier": "embedmind.model",
}


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use (PEP 562), then keep it here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'embedmind' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _Package(types.ModuleType):
    """This package's module type: ``embedmind.reembed`` stays the function."""

    def __setattr__(self, name: str, value: object) -> None:
        # Importing the submodule embedmind.reembed binds it here, over the
        # function of the same name; the function is the public name.
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
