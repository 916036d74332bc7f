"""``EmbedmindVectorStore``: a LangChain ``VectorStore`` over an embedmind store.

Returned ``Document.metadata`` equals what went in. ``similarity_search_with_score``
reports the store's similarity: the cosine of query and document clipped to
[0, 1], so an exact match scores 1. Relevance scores
(``similarity_search_with_relevance_scores``, and so a retriever of
``search_type="similarity_score_threshold"``) are the engine's own
``Hit.score``: the estimated probability, in [0, 1], that the document is
relevant, and ``score_threshold`` is passed to the engine as ``min_score``,
so the documents returned are exactly those of the unthresholded search
scoring at least the threshold. Both fall with rank. When the caller hands an
``Embeddings`` object it embeds everything; it must be the store's own model
(checked at construction).
Similarity search is the vector channel, so a query whose words occur nowhere
still finds its nearest documents. Reads cover a namespace scope as
``recall`` does; writes go to one namespace.

Document ids are scoped by namespace (see :mod:`langchain_embedmind._convert`):
two vector stores writing different namespaces of one file may use the same
ids, and neither can block or probe the other's. A document an older adapter
wrote under its raw id is still found, replaced in place and deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from embedmind import Draft, InvalidInputError, Memory, Recall, Store
from embedmind.ids import validate_id
from langchain_embedmind import _scope
from langchain_embedmind._convert import memory_id, to_document
from langchain_embedmind.embeddings import check_same_model


class EmbedmindVectorStore(VectorStore):
    """A LangChain vector store backed by :class:`embedmind.Store`.

    Args:
        store: An open store; when omitted one is opened at ``path``.
        embedding: LangChain embeddings to use for documents and queries;
            when omitted, the store's own embedder. With ``store``, it must
            be the model the store was opened with.
        namespace: The namespaces reads cover: ``"a/b"``, ``"a/b/*"`` (the
            subtree) or a list of those, as in ``Store.recall``.
        write_namespace: Where added documents go; by default ``namespace``
            when it names one namespace. It must lie inside ``namespace``.
        path: Where to open a store when ``store`` is omitted
            (``":memory:"`` by default).

    Raises:
        InvalidInputError: When ``embedding`` is not the store's model (the
            message gives the line to write instead), or a namespace is invalid.
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        embedding: Embeddings | None = None,
        namespace: str | Sequence[str] = "default",
        write_namespace: str | None = None,
        path: str = ":memory:",
    ) -> None:
        self.namespace = _scope.read_scope(namespace)
        self.write_namespace = _scope.write_target(self.namespace, write_namespace)
        if store is None:
            store = Store.open(path, embedder=embedding if embedding is not None else "default")
        elif embedding is not None:
            check_same_model(store, embedding)
        self.store = store
        self._embedding = embedding

    @property
    def embeddings(self) -> Embeddings | None:
        """The LangChain embeddings in use, if the caller gave one."""
        return self._embedding

    # -- writes ----------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Add (or, for an existing id, replace) texts; return their ids (None slots generated)."""
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        given: list[str | None] = list(ids) if ids is not None else [None] * len(texts)
        if not len(texts) == len(metadatas) == len(given):
            raise ValueError("texts, metadatas and ids must have the same length")
        final = [i if i is not None else str(uuid.uuid4()) for i in given]
        target = self._target()
        stored = self._memory_ids(target, final)
        vectors = self._embed_documents(texts)
        drafts = [
            Draft(text, id=stored[i], namespace=target, metadata=meta, vector=vector)
            for text, meta, i, vector in zip(texts, metadatas, final, vectors, strict=True)
        ]
        self.store.remember_many(drafts, batch_size=kwargs.get("batch_size"))
        return final

    def _memory_ids(self, target: str, ids: list[str]) -> dict[str, str]:
        """The memory id each document is written under: scoped, or the raw id of an older write.

        A memory of ``target`` whose id is the raw document id was written
        before ids were scoped: it is replaced in place rather than given a
        scoped twin. A raw id found in another namespace is ignored, so the
        outcome is the same whether another tenant holds that id or not.
        """
        scoped = {i: memory_id(target, i, f"ids[{n}]") for n, i in enumerate(ids)}
        older = {m.id for m in self.store.get_many(list(scoped)) if m.namespace == target}
        return {i: i if i in older else scoped[i] for i in scoped}

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add documents (ids of ``None`` are generated; the documents are not mutated)."""
        ids = kwargs.pop("ids", None) or [doc.id for doc in documents]
        return self.add_texts(
            [doc.page_content for doc in documents],
            [dict(doc.metadata) for doc in documents],
            ids=list(ids),  # None slots are generated by add_texts
            **kwargs,
        )

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete documents by id (missing ids and ids outside ``namespace`` are left alone).

        ``None`` deletes the whole write namespace.
        """
        if ids is None:
            self.store.delete_namespace(self._target())
            return True
        for memory in self._find(ids):
            self.store.delete(memory.id)
        return True

    def _find(self, ids: Sequence[str]) -> list[Memory]:
        """The memories of the read scope written as these document ids, scoped or raw.

        A document id may have been written to any namespace of the scope, so
        each is looked up under every one that holds memories (and raw, as an
        older adapter or the engine's own API wrote it).

        Raises:
            InvalidInputError: When an id is not a valid id.
        """
        wanted = list(dict.fromkeys(validate_id(i, "ids") for i in ids))
        candidates = list(wanted)
        for namespace in _scope.namespaces(self.store, self.namespace):
            candidates += [m for m in (_scoped(namespace, i) for i in wanted) if m is not None]
        found = self.store.get_many(list(dict.fromkeys(candidates)))
        return [m for m in found if _scope.covers(self.namespace, m.namespace)]

    def _target(self) -> str:
        if self.write_namespace is None:
            raise InvalidInputError(
                "write_namespace",
                f"reads cover {self.namespace!r}, which names no single namespace to write to; "
                "pass one: EmbedmindVectorStore(store, namespace=..., write_namespace='a/b')",
            )
        return self.write_namespace

    # -- reads -----------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Documents for the ids that exist, with ``id`` set."""
        return [to_document(m) for m in self._find(ids)]

    def similarity_search(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The ``k`` documents nearest to ``query``."""
        return [
            doc for doc, _ in self.similarity_search_with_score(query, k, filter=filter, **kwargs)
        ]

    def similarity_search_with_score(
        self,
        query: str,
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """``(document, score)`` pairs, best first: cosine similarity clipped to [0, 1]."""
        return self._search(query, self._embed_query(query), k, filter)

    def similarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The ``k`` documents nearest to ``embedding``."""
        return [doc for doc, _ in self._search("", embedding, k, filter)]

    def similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """``(document, relevance)`` pairs, best first: each hit's probability of relevance.

        ``score_threshold`` (0-1) becomes the engine's ``min_score``: the
        pairs are exactly those of the unthresholded search scoring at least
        it, in the same order.

        Raises:
            InvalidInputError: When ``score_threshold`` is not a number within 0-1.
        """
        threshold = kwargs.pop("score_threshold", None)
        hits = self._hits(query, self._embed_query(query), k, kwargs.get("filter"), threshold)
        return [(to_document(hit.memory), hit.score) for hit in hits]

    async def asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """:meth:`similarity_search_with_relevance_scores` in an executor, off the event loop."""
        return await run_in_executor(
            None, self.similarity_search_with_relevance_scores, query, k, **kwargs
        )

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        # LangChain's default maps similarity_search_with_score through
        # _select_relevance_score_fn; the engine scores relevance itself.
        return self.similarity_search_with_relevance_scores(query, k, **kwargs)

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await self.asimilarity_search_with_relevance_scores(query, k, **kwargs)

    def _search(
        self, query: str, vector: list[float] | None, k: int, where: dict[str, Any] | None
    ) -> list[tuple[Document, float]]:
        """``(document, clipped cosine)`` pairs, best first (the vector channel's raw score)."""
        return [
            (to_document(hit.memory), _unit(hit.channels["vector"].raw))
            for hit in self._hits(query, vector, k, where)
        ]

    def _hits(
        self,
        query: str,
        vector: list[float] | None,
        k: int,
        where: dict[str, Any] | None,
        min_score: float | None = None,
    ) -> Recall:
        """The vector channel's hits: a query whose words occur nowhere still finds its nearest."""
        return self.store.recall(
            query,
            k=k,
            namespace=self.namespace,
            where=where,
            mode="vector",
            vector=vector,
            min_score=min_score,
        )

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Diverse results: maximal marginal relevance over the ``fetch_k`` nearest."""
        vector = self._embed_query(query) or self._store_embedder().embed_query(query).tolist()
        return self.max_marginal_relevance_search_by_vector(vector, k, fetch_k, lambda_mult, filter)

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Diverse results around ``embedding``."""
        found = self._search("", embedding, fetch_k, filter)
        if not found:
            return []
        texts = [doc.page_content for doc, _ in found]
        candidates = np.asarray(
            self._embedding.embed_documents(texts)
            if self._embedding is not None
            else self._store_embedder().embed_documents(texts)
        )
        chosen = maximal_marginal_relevance(
            np.asarray(embedding, dtype=np.float32), list(candidates), lambda_mult=lambda_mult, k=k
        )
        return [found[i][0] for i in chosen]

    # -- construction ------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        path: str = ":memory:",
        namespace: str = "default",
        **kwargs: Any,
    ) -> EmbedmindVectorStore:
        """Open a store at ``path`` (``":memory:"`` by default) and add ``texts``."""
        vectorstore = cls(embedding=embedding, path=path, namespace=namespace)
        vectorstore.add_texts(texts, metadatas, ids=list(ids) if ids else None)
        return vectorstore

    # -- embedding -----------------------------------------------------------------

    def _embed_documents(self, texts: list[str]) -> list[Any]:
        # Blank texts are not sent to the model: the engine refuses them with
        # a typed error naming the item, which a remote model would pre-empt
        # with its own (or charge for).
        wanted = [i for i, text in enumerate(texts) if isinstance(text, str) and text.strip()]
        vectors: list[Any] = [None] * len(texts)
        if self._embedding is None or not wanted:
            return vectors
        embedded = self._embedding.embed_documents([texts[i] for i in wanted])
        for i, vector in zip(wanted, embedded, strict=True):
            vectors[i] = vector
        return vectors

    def _store_embedder(self) -> Any:
        if self.store.embedder is None:
            raise ValueError("the store was opened without an embedder: pass embedding=...")
        return self.store.embedder

    def _embed_query(self, query: str) -> list[float] | None:
        return None if self._embedding is None else list(self._embedding.embed_query(query))


def _scoped(namespace: str, document_id: str) -> str | None:
    """The memory id of a document, or ``None`` when it is too long to live in ``namespace``."""
    try:
        return memory_id(namespace, document_id)
    except InvalidInputError:
        return None


def _unit(score: float) -> float:
    """A cosine similarity clipped to [0, 1] (orthogonal and opposite both score 0)."""
    return max(0.0, min(1.0, float(score)))
