"""``EmbedmindRetriever``: embedmind recall as a LangChain retriever.

Works positionally (``EmbedmindRetriever(store)`` in a chain) and by keyword;
``invoke(query, k=..., where=...)`` overrides the constructor's settings for
one call. Each ``Document`` carries the memory's document id as ``id`` (its
memory id, less the namespace prefix a vector store writes) and its metadata
plus recall details under the single reserved key ``"embedmind"``. With
``fragments=True`` it returns one document per fragment, with its locator.

The details of a memory's document: ``score``, the engine's ``Hit.score`` (in
hybrid mode, the default, the estimated probability in [0, 1] that the memory
is relevant to the query); ``rank``; ``channels``, each channel's ``rank`` and
``raw`` score (BM25 for ``text``, cosine for ``vector``); ``namespace``,
``created_at`` and ``updated_at``. ``min_score`` drops the documents scoring
below it, exactly as ``Store.recall`` does (the others keep their ranks).
A fragment's document carries ``record_id``, ``locator`` and ``score`` (the
fragment's cosine).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from embedmind import InvalidInputError, Store
from langchain_embedmind._convert import RESERVED, hit_document

_RECALL_OPTIONS = (
    "namespace", "where", "mode", "recency", "expand_related", "tags", "as_of", "min_score",
)  # fmt: skip


class EmbedmindRetriever(BaseRetriever):
    """Recall memories (or fragments) for a query.

    Args:
        store: The embedmind store (also accepted positionally).
        k: How many documents to return.
        namespace: Namespace scope (``"a/b"``, ``"a/b/*"``, a list, or ``None``).
        where: A metadata filter in embedmind's ``where`` language.
        mode: ``"hybrid"``, ``"vector"`` or ``"text"``.
        recency: Add recency as a third fusion list.
        expand_related: Append one hop of graph neighbours.
        min_score: Drop the memories scoring below this probability (0-1);
            refused with ``fragments``, whose scores are cosines.
        fragments: Return fragments (with locators) instead of whole memories.
        max_per_record: With ``fragments``, at most this many per record.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Store
    k: int = 4
    namespace: str | list[str] | None = None
    where: dict[str, Any] | None = None
    mode: str = "hybrid"
    recency: bool = False
    expand_related: bool = False
    min_score: float | None = None
    fragments: bool = False
    max_per_record: int | None = None

    def __init__(self, store: Store | None = None, /, **data: Any) -> None:
        if store is not None:
            data["store"] = store
        super().__init__(**data)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.pop("k", self.k))
        options = {name: kwargs.pop(name, getattr(self, name, None)) for name in _RECALL_OPTIONS}
        if kwargs.pop("fragments", self.fragments):
            if options["min_score"] is not None:
                # A fragment's score is a cosine, not a probability: no silent cut.
                raise InvalidInputError(
                    "min_score",
                    "fragment scores are cosines, not probabilities; drop min_score "
                    "with fragments=True",
                )
            cap = kwargs.pop("max_per_record", self.max_per_record)
            return self._fragments(query, k, cap, options)
        options = {name: value for name, value in options.items() if value is not None}
        result = self.store.recall(query, k=k, **options, **kwargs)
        return [hit_document(hit) for hit in result]

    def _fragments(
        self, query: str, k: int, cap: int | None, options: dict[str, Any]
    ) -> list[Document]:
        hits = self.store.fragments.query(
            query,
            k=k,
            max_per_record=cap,
            namespace=options.get("namespace"),
            where=options.get("where"),
        )
        records = {m.id: m for m in self.store.get_many(sorted({h.record_id for h in hits}))}
        documents = []
        for hit in hits:
            memory = records.get(hit.record_id)
            start, end = hit.locator.start, hit.locator.end
            text = (
                hit.text if hit.text is not None else (memory.content[start:end] if memory else "")
            )
            details = {"record_id": hit.record_id, "locator": [start, end], "score": hit.score}
            metadata = {**(memory.metadata if memory else {}), RESERVED: details}
            documents.append(
                Document(page_content=text, metadata=metadata, id=f"{hit.record_id}@{start}-{end}")
            )
        return documents
