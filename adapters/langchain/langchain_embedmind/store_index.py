"""LangGraph's ``IndexConfig`` over an embedmind store: which texts of a value get a vector.

LangGraph keeps one vector per indexed field path, and one per list element
for ``field[*]`` paths, and scores an item by its best field. Here each of
those vectors is one fragment of the item's memory in the engine's fragment
index (locator ``(i, i + 1)`` for the item's ``i``-th vector, the path list in
the item's reserved metadata), so a query search is one fragment query with
``max_per_record=1``: the best field per item, best first, with its cosine as
the score, as LangGraph's ``InMemoryStore`` reports it (the engine scores
fragments exactly from their float32 rows, within 1e-6 of LangGraph's float64).

The vectors come from LangGraph's ``embed`` (through its own
``ensure_embeddings``, so callables, async callables and provider strings work
as in LangGraph), and the texts from its own ``tokenize_path`` and
``get_text_at_path``, so paths mean exactly what they mean in LangGraph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    IndexConfig,
    PutOp,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from embedmind import InvalidInputError, Store

PROBE = "embedmind probe: does this model match the store's?"
TOLERANCE = 1e-5  # float32 round-off of two unit vectors of the same model


class ModelEmbeddings(Embeddings):
    """An object with ``embed_documents``/``embed_query`` (arrays) as LangChain ``Embeddings``.

    embedmind's own embedders (and the store's) are not ``Embeddings``; LangGraph's
    ``ensure_embeddings`` would take them for a plain callable.
    """

    def __init__(self, model: Any, *, is_store_model: bool = False) -> None:
        """Wrap ``model``."""
        self.model = model
        self.is_store_model = is_store_model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents with the wrapped model."""
        return [list(map(float, row)) for row in self.model.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query with the wrapped model."""
        return list(map(float, self.model.embed_query(text)))


def as_embeddings(embed: Any) -> Embeddings:
    """LangGraph's ``embed`` (or an embedmind embedder) as LangChain ``Embeddings``."""
    if not isinstance(embed, Embeddings) and all(
        callable(getattr(embed, name, None)) for name in ("embed_documents", "embed_query")
    ):
        return ModelEmbeddings(embed)
    return ensure_embeddings(embed)


@dataclass(frozen=True)
class Indexing:
    """A resolved index config: the embeddings and the tokenized default paths."""

    embeddings: Embeddings
    dims: int
    config: dict[str, Any]

    @property
    def fields_default(self) -> list[tuple[str, Any]]:
        """The configured ``fields``, tokenized: what a put without ``index=`` indexes."""
        return list(self.config["__tokenized_fields"])


WHOLE_VALUE: list[tuple[str, Any]] = [("$", "$")]


def field_texts(op: PutOp, default: Sequence[tuple[str, Any]]) -> list[tuple[str, str]]:
    """The ``(path label, text)`` pairs ``op`` indexes (``[]`` for ``index=False``).

    Labels follow ``InMemoryStore``: the path, or ``path.i`` for the ``i``-th
    of several texts at one path. Blank texts are skipped: they carry nothing
    to match and some models return a zero vector, which has no direction.
    """
    if op.index is False or op.value is None:
        return []
    paths: Sequence[tuple[str, Any]] = (
        default
        if op.index is None
        else [(p, p if p == "$" else tokenize_path(p)) for p in op.index]
    )
    found: list[tuple[str, str]] = []
    for path, tokens in paths:
        texts = get_text_at_path(op.value, tokens)
        labels = [path] if len(texts) == 1 else [f"{path}.{i}" for i in range(len(texts))]
        found += [(label, text) for label, text in zip(labels, texts, strict=True)]
    return [(label, text) for label, text in found if text.strip()]


def resolve_index(store: Store, index: IndexConfig | None) -> Indexing | None:
    """Resolve ``index`` against ``store`` (``None``: the store's embedder over ``$``).

    Raises:
        InvalidInputError: When the config needs vectors the store cannot hold
            (no embedder, other dims, another model); the message says what to
            write instead.
    """
    embedder = store.embedder
    if index is None:
        if embedder is None:
            return None  # a text-only store: query searches rank by BM25
        index = {"dims": embedder.dims, "fields": ["$"]}
    config: dict[str, Any] = dict(index)
    if embedder is None:
        raise InvalidInputError(
            "index",
            "the store was opened without an embedder, so it cannot hold vectors: open it "
            "with the same model, Store.open(path, embedder=index['embed']), or use "
            "EmbedmindStore.open(path, index=...)",
        )
    dims = config.get("dims", embedder.dims)
    if dims != embedder.dims:
        raise InvalidInputError(
            "index",
            f"dims={dims!r} but the store's embedder ({embedder.model_id}) makes "
            f"{embedder.dims}-dimensional vectors: write dims={embedder.dims}, or open "
            "the store with your model: Store.open(path, embedder=index['embed'])",
        )
    embed = config.get("embed")
    embeddings = (
        ModelEmbeddings(embedder, is_store_model=True) if embed is None else as_embeddings(embed)
    )
    _check_same_model(store, embeddings)
    config["embed"] = embeddings
    config["dims"] = dims
    config["__tokenized_fields"] = [
        (p, p if p == "$" else tokenize_path(p)) for p in (config.get("fields") or ["$"])
    ]
    return Indexing(embeddings, dims, config)


def _check_same_model(store: Store, embeddings: Embeddings) -> None:
    """Refuse an ``embed`` that is not the store's model (one probe text, both ways)."""
    if isinstance(embeddings, ModelEmbeddings) and embeddings.is_store_model:
        return
    try:
        given = np.asarray(embeddings.embed_query(PROBE), dtype=np.float64)
    except ValueError as e:
        if "async function" in str(e):
            return  # async-only: the first write checks the length, the probe cannot run here
        raise
    embedder: Any = store.embedder
    recorded = np.asarray(embedder.embed_query(PROBE), dtype=np.float64)
    norm = float(np.linalg.norm(given))
    if (
        given.shape != recorded.shape
        or norm == 0.0
        or abs(float(given @ recorded) / norm - 1.0) > TOLERANCE
    ):
        raise InvalidInputError(
            "index",
            f"index['embed'] is not the store's embedder ({embedder.model_id}): the "
            "fragment vectors and the store's must come from one model. Open the store "
            "with yours, Store.open(path, embedder=index['embed']), or leave 'embed' out "
            "to use the store's",
        )


def as_vectors(
    raw: Sequence[Sequence[float]], fields: Sequence[tuple[str, str]]
) -> list[list[float]]:
    """Unit vectors, one per field: the item's fragments in the engine's index.

    The engine keeps them as float32 rows and scores a query with their exact
    cosines, so the adapter keeps no copy of its own.

    Raises:
        InvalidInputError: When the embeddings did not return one finite,
            non-zero vector per text (nothing is written).
    """
    try:
        vectors = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidInputError("index", f"the embeddings returned no vectors: {e}") from None
    if vectors.ndim != 2 or vectors.shape[0] != len(fields):
        raise InvalidInputError(
            "index", f"the embeddings returned shape {vectors.shape} for {len(fields)} texts"
        )
    norms = np.linalg.norm(vectors, axis=1)
    for (path, _), norm in zip(fields, norms, strict=True):
        if not np.isfinite(norm) or norm == 0.0:
            raise InvalidInputError("index", f"the embedding of field {path!r} has no direction")
    unit: list[list[float]] = (vectors / norms[:, None]).tolist()
    return unit


def value_text(value: Mapping[str, Any]) -> str:
    """The whole value as text (LangGraph's ``$``): the content of an unindexed item."""
    return get_text_at_path(value, "$")[0]
