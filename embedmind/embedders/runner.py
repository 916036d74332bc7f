"""Run one tokenized text through an onnxruntime session of a prepared graph."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import numpy.typing as npt

from embedmind.embedders.prepare import PreparedGraph

__all__ = ["GraphRunner"]


class GraphRunner:
    """A single-threaded onnxruntime session that embeds one text per call.

    One text per call is what makes vectors batch-invariant: the int8
    graph's activation scales are computed over the call's whole input, so
    a text must never share a call with another. Each call uses one
    intra-op thread, so results do not depend on the caller's thread count
    either; parallelism comes from running calls concurrently (``run`` is
    thread-safe and releases the GIL).

    Args:
        graph: The graph to load.

    Raises:
        RuntimeError: When onnxruntime is missing or cannot load the file.
    """

    def __init__(self, graph: PreparedGraph) -> None:
        self.graph = graph
        self.session = _session(graph)
        self._dtype = np.int32 if graph.pooled else np.int64

    def feeds(self, ids: npt.NDArray[np.int64]) -> dict[str, npt.NDArray[np.generic]]:
        """Return the session inputs for one text's ids (shape ``[1, n]``)."""
        row = ids.astype(self._dtype, copy=False).reshape(1, -1)
        feeds: dict[str, npt.NDArray[np.generic]] = {
            "input_ids": row,
            "attention_mask": np.ones_like(row),
        }
        if not self.graph.pooled:
            feeds["token_type_ids"] = np.zeros_like(row)
        return feeds

    def embed(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """Return the L2-normalised mean-pooled embedding of one text.

        Args:
            ids: The text's ``[CLS] ... [SEP]`` ids.

        Returns:
            A float32 unit vector.
        """
        out = np.asarray(self.session.run(None, self.feeds(ids))[0], dtype=np.float32)
        # Pooled graphs already averaged over the (all-ones) mask; the shipped
        # graph returns per-token states, averaged here.
        pooled = out[0] if self.graph.pooled else out[0].mean(axis=0)
        norm = float(np.linalg.norm(pooled))
        if not np.isfinite(norm) or norm == 0.0:
            raise RuntimeError("the model produced a zero or non-finite embedding")
        result: npt.NDArray[np.float32] = (pooled / norm).astype(np.float32)
        return result


def _session(graph: PreparedGraph) -> Any:
    """Create a CPU session with one intra-op thread and full graph optimisation."""
    try:
        # Imported by name: onnxruntime ships no type information.
        ort: Any = importlib.import_module("onnxruntime")
    except ImportError as exc:
        raise RuntimeError("the default embedder needs the 'onnxruntime' package") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Spinning worker threads burn the cores other sessions' calls need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(
            str(graph.path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise RuntimeError(f"onnxruntime could not load {graph.path}: {exc}") from exc
