"""Accept any embedder: embedmind's own, a plain Python class, LangChain's or LlamaIndex's.

:func:`resolve` turns what the caller passed to ``Store.open(embedder=...)``
into an object with the :class:`~embedmind.embedders.protocol.Embedder`
interface. Objects that already have it are used as they are; objects with
LangChain's ``embed_documents``/``embed_query`` or LlamaIndex's
``get_text_embedding_batch``/``get_query_embedding`` are wrapped: their
output is validated (finite, non-zero, consistent length), converted to
float32 and L2-normalised, and long texts are split into character windows
since their tokenizer is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from embedmind.embedders.protocol import Embedder, Span, Vector, Vectors
from embedmind.errors import EmbedderError, InvalidInputError

DEFAULT = "default"
"""The embedded all-MiniLM-L6-v2 model (``Store.open``'s default)."""
_WINDOW_CHARS = 2_000
_OVERLAP_CHARS = 200


def resolve(embedder: object) -> Embedder | None:
    """Return an :class:`Embedder` for ``embedder`` (``None`` means a text-only store).

    Raises:
        InvalidInputError: When the object cannot embed text.
    """
    if embedder is None:
        return None
    if isinstance(embedder, str):
        raise InvalidInputError("embedder", "names are resolved through the plugin registry")
    if isinstance(embedder, Embedder):
        return embedder
    for documents_name, query_name in (
        ("embed_documents", "embed_query"),  # LangChain, plain classes
        ("get_text_embedding_batch", "get_query_embedding"),  # LlamaIndex
    ):
        documents = getattr(embedder, documents_name, None)
        query = getattr(embedder, query_name, None)
        if callable(documents) and callable(query):
            return cast(Embedder, ForeignEmbedder(embedder, documents, query))
    raise InvalidInputError(
        "embedder",
        f"{type(embedder).__name__} has neither embed_documents/embed_query nor "
        "get_text_embedding_batch/get_query_embedding",
    )


def normalized(vectors: object, dims: int | None, field: str = "vector") -> Vectors:
    """Validate vectors (finite, non-zero, ``dims`` long) and return unit float32 rows.

    Raises:
        InvalidInputError: When a vector is malformed.
    """
    try:
        raw = np.asarray(vectors)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(field, "expected a sequence of numbers") from None
    # Only real numbers make a vector: numpy would parse strings ("0.5"), take
    # booleans as 0/1, drop imaginary parts and raise a raw OverflowError for
    # ints beyond a float, so those kinds (and object arrays) are refused here.
    if raw.dtype.kind not in "iuf":
        raise InvalidInputError(field, f"expected real numbers, got {raw.dtype} values")
    array = raw.astype(np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or (dims is not None and array.shape[1] != dims) or not array.shape[1]:
        raise InvalidInputError(
            field, f"expected vectors of length {dims}, got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise InvalidInputError(field, "contains NaN or infinity")
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(array, axis=1)
    odd = ~((norms > 0) & np.isfinite(norms))
    if odd.any():
        # Squares of huge (1e308) or tiny (1e-300) components overflow or
        # underflow: scale those rows by their largest component first, or a
        # finite vector would be stored as zeros or refused as zero.
        peaks = np.abs(array[odd]).max(axis=1)
        if (peaks == 0).any():
            raise InvalidInputError(field, "a zero vector has no direction")
        array[odd] = array[odd] / peaks[:, None]
        norms[odd] = np.linalg.norm(array[odd], axis=1)
    result: Vectors = (array / norms[:, None]).astype(np.float32)
    return result


def normalized_one(vector: object, dims: int | None, field: str = "vector") -> Vector:
    """Like :func:`normalized` for exactly one vector (``(dims,)`` or ``(1, dims)``).

    Raises:
        InvalidInputError: When the vector is malformed, or is several vectors:
            taking the first row of those would silently drop the rest.
    """
    rows = normalized(vector, dims, field)
    if rows.shape[0] != 1:
        raise InvalidInputError(field, f"expected one vector, got {rows.shape[0]}")
    one: Vector = rows[0]
    return one


class ForeignEmbedder:
    """Wraps another library's embedding object in the :class:`Embedder` interface."""

    metric = "cos"
    max_tokens = 512

    def __init__(
        self,
        inner: object,
        documents: Callable[[list[str]], Any],
        query: Callable[[str], Any],
    ) -> None:
        self.inner = inner
        self._documents = documents
        self._query = query
        name = getattr(inner, "model_name", None) or getattr(inner, "model", None)
        kind = f"{type(inner).__module__}.{type(inner).__qualname__}"
        self.model_id = f"{kind}:{name}" if isinstance(name, str) else kind
        self.fingerprint = self.model_id
        self._dims: int | None = None

    @property
    def dims(self) -> int:
        """Vector length, learned from the first embedding (probed if needed)."""
        if self._dims is None:
            self._dims = int(self.embed_query("dimension probe").shape[0])
        return self._dims

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` through the wrapped object."""
        if not texts:
            return np.empty((0, self._dims or 0), dtype=np.float32)
        try:
            raw = self._documents(list(texts))
        except Exception as e:
            raise EmbedderError(f"{self.model_id} failed to embed documents: {e}") from e
        return self._check(raw, len(texts))

    def embed_query(self, text: str) -> Vector:
        """Embed one query through the wrapped object."""
        try:
            raw = self._query(text)
        except Exception as e:
            raise EmbedderError(f"{self.model_id} failed to embed a query: {e}") from e
        vector: Vector = self._check([raw], 1)[0]
        return vector

    def _check(self, raw: object, expected: int) -> Vectors:
        try:
            vectors = normalized(raw, self._dims, "embedder output")
        except InvalidInputError as e:
            raise EmbedderError(f"{self.model_id} returned unusable vectors: {e}") from e
        if vectors.shape[0] != expected:
            raise EmbedderError(
                f"{self.model_id} returned {vectors.shape[0]} vectors for {expected}"
            )
        self._dims = int(vectors.shape[1])
        return vectors

    def spans(self, text: str, *, overlap_tokens: int = 32) -> list[Span]:
        """Character windows: the wrapped model's tokenizer is unknown."""
        return character_spans(text, _WINDOW_CHARS, _OVERLAP_CHARS)


def character_spans(text: str, window: int, overlap: int) -> list[Span]:
    """Overlapping ``[start, end)`` windows of at most ``window`` characters covering ``text``."""
    if len(text) <= window:
        return [(0, len(text))]
    spans, start = [], 0
    while True:
        end = min(start + window, len(text))
        spans.append((start, end))
        if end == len(text):
            return spans
        start = end - overlap


def identity(embedder: Embedder) -> dict[str, str]:
    """What a store records about its embedder."""
    return {
        "model_id": embedder.model_id,
        "dims": str(embedder.dims),
        "metric": embedder.metric,
        "fingerprint": embedder.fingerprint,
    }
