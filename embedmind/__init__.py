"""embedmind: an embedded long-term memory engine for LLM stacks."""

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
