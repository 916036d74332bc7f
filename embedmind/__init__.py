"""embedmind: an embedded long-term memory engine for LLM stacks."""

from embedmind.errors import (
    ConflictError,
    EmbedmindError,
    FilterTypeError,
    InvalidFilterError,
    InvalidInputError,
    NotFoundError,
    SchemaVersionError,
    StorageError,
    StoreBusyError,
    StoreClosedError,
)
from embedmind.model import (
    AgentStats,
    ChannelScore,
    Draft,
    Hit,
    Level,
    Memory,
    Mode,
    Recall,
    Stats,
    Tier,
)
from embedmind.store import Store

__version__ = "0.1.0"

__all__ = [
    "AgentStats",
    "ChannelScore",
    "ConflictError",
    "Draft",
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
    "SchemaVersionError",
    "Stats",
    "StorageError",
    "Store",
    "StoreBusyError",
    "StoreClosedError",
    "Tier",
    "__version__",
]
