"""``EmbedmindEmbeddings``: the engine's default model as LangChain embeddings."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from embedmind import InvalidInputError, Store
from embedmind.plugins import resolve_embedder

_FIX = (
    "open the store with that model instead: "
    "EmbedmindVectorStore(embedmind.Store.open(path, embedder=embedding))"
)


class EmbedmindEmbeddings(Embeddings):
    """The embedded all-MiniLM-L6-v2 (or any registered embedder) for LangChain.

    Share one model between a chain and a store:
    ``Store.open(path)`` uses the same default model.

    Args:
        name: A registered embedder name (default: the embedded model).
    """

    def __init__(self, name: str = "default") -> None:
        self._embedder: Any = resolve_embedder(name)

    @property
    def model_id(self) -> str:
        """The model identity a store records (compared with the store's own)."""
        return str(self._embedder.model_id)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return [list(map(float, row)) for row in self._embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return list(map(float, self._embedder.embed_query(text)))


def check_same_model(store: Store, embedding: Embeddings) -> None:
    """Refuse ``embedding`` unless it is the model ``store`` embeds with.

    The engine keeps vectors only in a store that has an embedder, and every
    vector in one index must come from one model: vectors of another length
    are refused at the first write, and vectors of another model with the
    same length would be ranked against each other silently.

    Raises:
        InvalidInputError: When the store has no embedder or another model.
    """
    own = store.embedder
    if own is None:
        raise InvalidInputError(
            "embedding", f"the store was opened with embedder=None and keeps no vectors; {_FIX}"
        )
    inner = getattr(own, "inner", own)  # what Store.open wrapped, for a foreign model
    if inner is embedding or (type(inner) is type(embedding) and _equal(inner, embedding)):
        return
    if isinstance(embedding, EmbedmindEmbeddings) and embedding.model_id == own.model_id:
        return
    raise InvalidInputError(
        "embedding",
        f"the store embeds with {own.model_id}, not this {type(embedding).__name__}; {_FIX}",
    )


def _equal(a: object, b: object) -> bool:
    # Pydantic models (most LangChain embeddings) compare by their settings.
    try:
        return bool(a == b)
    except Exception:  # an odd __eq__ means "not known to be the same model"
        return False
