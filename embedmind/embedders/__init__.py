"""Embedding models: the default MiniLM embedder and a hashing test embedder.

Importing this package loads neither onnxruntime nor the model; that
happens when a :class:`MiniLMEmbedder` is first constructed.
"""

from embedmind.embedders.hashing import HashingEmbedder
from embedmind.embedders.minilm import MiniLMEmbedder, default_embedder
from embedmind.embedders.protocol import Embedder, Span, Vector, Vectors

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "Span",
    "Vector",
    "Vectors",
    "default_embedder",
]
