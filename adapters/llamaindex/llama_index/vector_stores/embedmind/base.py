"""``EmbedmindVectorStore``: a LlamaIndex vector store over an embedmind store.

Each node is a memory: its text is the content, its metadata the user
metadata (filterable), and LlamaIndex's own serialisation (``_node_content``,
``_node_type``, document ids) sits under one reserved key, out of BM25 text
and out of user filters. A node is a fragment of its ``ref_doc_id``: its
``start_char_idx``/``end_char_idx`` are the locator, and
``max_per_record`` (through ``vector_store_kwargs``) caps hits per source
document before the top-k cut. A similarity is the engine's ``Hit.score``,
the estimated probability in [0, 1] that the node is relevant; see
:mod:`.scoring` for what each query mode runs. The store's embedder must be
the model LlamaIndex embeds with; a node or query embedding of another length
is refused with the line to write instead.

Node ids are scoped by namespace: a node is stored under
:func:`memory_id` of (namespace, node id), and its node id is kept in its
metadata, which every read goes by. Two stores on different namespaces of one
file can therefore use the same node ids, and neither can block or probe the
other's (the engine's ids are unique across the file, so a raw node id would
collide, and the collision error would confirm it exists). A node written
before ids were scoped (its memory id is its node id) is still read by its
metadata, deleted, and updated in place.

The async methods (``async_add``, ``aquery``, ``aget_nodes``, ``adelete``,
``adelete_nodes``, ``aclear``) run their sync twin in a worker thread
(``asyncio.to_thread``): the engine's API is synchronous, on SQLite and on
PostgreSQL alike, and LlamaIndex's defaults would run it on the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core import Settings
from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
from llama_index.vector_stores.embedmind import scoring
from llama_index.vector_stores.embedmind.embedding import EmbedmindEmbedding
from llama_index.vector_stores.embedmind.filters import to_where
from llama_index.vector_stores.embedmind.scoring import Found
from pydantic import PrivateAttr

from embedmind import Draft, Hit, InvalidInputError, Memory, Store
from embedmind.ids import validate_id
from embedmind.query.scope import normalize_namespace

RESERVED = "__llama_index__"
REF = "__ref_doc_id__"
NODE = "__node_id__"
_HIDDEN = (RESERVED, REF, NODE)
_FROM_SETTINGS = "llama_index Settings"
_FIX = (
    "open the store with the model LlamaIndex embeds with: "
    "EmbedmindVectorStore(embedmind.Store.open(path, embedder=Settings.embed_model))"
)


class EmbedmindVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store backed by :class:`embedmind.Store`.

    Args:
        store: An open store; when omitted one is opened at ``path``.
        path: Where to open a store (``":memory:"`` by default).
        namespace: The embedmind namespace nodes live in.
        embedder: The store's embedder when it opens one. By default the
            model set as ``Settings.embed_model`` (so the index and the store
            share it), else the embedded model; any LlamaIndex embedding or
            registered embedder name also works.
        flat_metadata: Refuse nested metadata, as LlamaIndex's flat stores do.
    """

    stores_text: bool = True
    flat_metadata: bool = False
    namespace: str = "llamaindex"
    _store: Store = PrivateAttr()

    def __init__(
        self,
        store: Store | None = None,
        *,
        path: str | None = None,
        namespace: str = "llamaindex",
        embedder: Any = _FROM_SETTINGS,
        flat_metadata: bool = False,
        **kwargs: Any,
    ) -> None:
        fields = {"flat_metadata": flat_metadata, "namespace": namespace, **kwargs}
        super().__init__(stores_text=True, **fields)
        if store is None:
            chosen = _settings_model() if embedder is _FROM_SETTINGS else embedder
            store = Store.open(path or ":memory:", embedder=chosen)
        self._store = store

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises."""
        return "EmbedmindVectorStore"

    @property
    def client(self) -> Store:
        """The underlying embedmind store."""
        return self._store

    # -- writes ----------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Store nodes (an existing id is replaced); return their ids in order."""
        drafts = []
        # Checked as the engine checks its own ids: they are looked up as such below.
        ids = self._memory_ids(
            [validate_id(node.node_id, f"nodes[{i}].node_id") for i, node in enumerate(nodes)]
        )
        for i, node in enumerate(nodes):
            if node.embedding is not None:
                self._check_embedding(node.embedding, f"nodes[{i}].embedding")
            serial = node_to_metadata_dict(node, remove_text=True, flat_metadata=self.flat_metadata)
            user = dict(node.metadata)
            reserved = {k: v for k, v in serial.items() if k not in user}
            drafts.append(
                Draft(
                    node.get_content(metadata_mode=MetadataMode.NONE),
                    id=ids[node.node_id],
                    namespace=self.namespace,
                    metadata={**user, RESERVED: reserved, REF: node.ref_doc_id, NODE: node.node_id},
                    vector=node.get_embedding() if node.embedding is not None else None,
                )
            )
        self._store.remember_many(drafts, batch_size=kwargs.get("batch_size"))
        return [node.node_id for node in nodes]

    def _memory_ids(self, node_ids: list[str]) -> dict[str, str]:
        """The memory id each node is written under: scoped, or the raw id of an older write.

        A memory whose id is the raw node id, in this namespace, was written
        before ids were scoped: it is updated in place rather than given a
        scoped twin. One elsewhere is another tenant's and is not looked at
        further: this tenant's write goes to its own scoped id either way.
        """
        namespace = normalize_namespace(self.namespace)
        unique = list(dict.fromkeys(node_ids))
        older = {m.id for m in self._store.get_many(unique) if m.namespace == namespace}
        return {i: i if i in older else memory_id(namespace, i) for i in unique}

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of one source document."""
        self._delete_where({REF: ref_doc_id})

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **kwargs: Any,
    ) -> None:
        """Delete nodes by id and/or filter."""
        self._delete_where(self._where(filters, None, node_ids))

    def clear(self) -> None:
        """Delete every node of this store's namespace."""
        self._store.delete_namespace(self.namespace)

    def _delete_where(self, where: dict[str, Any] | None) -> None:
        for memory in list(self._iter(where)):
            self._store.delete(memory.id)

    # -- async: the sync methods in a worker thread, never on the event loop ----

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """:meth:`add` in a worker thread."""
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """:meth:`delete` in a worker thread."""
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """:meth:`delete_nodes` in a worker thread."""
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aclear(self) -> None:
        """:meth:`clear` in a worker thread."""
        await asyncio.to_thread(self.clear)

    async def aget_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
    ) -> list[BaseNode]:
        """:meth:`get_nodes` in a worker thread."""
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """:meth:`query` in a worker thread."""
        return await asyncio.to_thread(self.query, query, **kwargs)

    # -- reads -----------------------------------------------------------------

    def get_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **kwargs: Any,
    ) -> list[BaseNode]:
        """Nodes by id and/or filter."""
        return [self._node(m) for m in self._iter(self._where(filters, None, node_ids))]

    def _iter(self, where: dict[str, Any] | None) -> Any:
        return self._store.iter(
            self.namespace, where=where, include_expired=True, include_superseded=True
        )

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Answer every LlamaIndex query mode; ``max_per_record`` caps hits per document.

        Raises:
            InvalidInputError: When the query embedding's length is not the store's.
        """
        where = self._where(query.filters, query.doc_ids, query.node_ids)
        k = query.similarity_top_k
        vector = query.query_embedding
        if vector is not None and self._store.embedder is None:
            vector = None  # a text-only store answers by text, as recall does
        if vector is not None:
            self._check_embedding(vector, "query_embedding")
        run = self._runner(query, vector, where, kwargs)
        cap = kwargs.get("max_per_record")
        found = _capped(run, k, cap) if cap else run(k)[:k]
        nodes = [self._node(m) for m, _ in found]
        return VectorStoreQueryResult(
            nodes=nodes, similarities=[s for _, s in found], ids=[n.node_id for n in nodes]
        )

    def _check_embedding(self, vector: Sequence[float], field: str) -> None:
        """Refuse vectors the store cannot hold, saying which line to write instead."""
        own = self._store.embedder
        if own is None:
            raise InvalidInputError(field, f"the store was opened with embedder=None; {_FIX}")
        if len(vector) != own.dims:
            raise InvalidInputError(
                field,
                f"{len(vector)} numbers, but the store holds {own.dims}-dimensional vectors "
                f"of {own.model_id}; {_FIX}",
            )

    def _runner(
        self,
        query: VectorStoreQuery,
        vector: list[float] | None,
        where: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> Callable[[int], Found]:
        mode, text = query.mode, query.query_str or ""
        if (
            mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE)
            or vector is None
        ):
            depth = query.sparse_top_k or query.similarity_top_k
            return lambda k: self._text(text, max(k, depth), where)
        if mode == VectorStoreQueryMode.HYBRID:
            return lambda k: self._hybrid(query, vector, where, k)
        if mode == VectorStoreQueryMode.MMR:
            threshold = query.mmr_threshold or kwargs.get("mmr_threshold") or 0.5
            return lambda k: self._mmr(vector, where, k, float(threshold))
        return lambda k: self._vector(text, vector, k, where)

    def _text(self, text: str, k: int, where: dict[str, Any] | None) -> Found:
        return self._recall(text, None, "text", k, where)

    def _vector(
        self, text: str, vector: list[float], k: int, where: dict[str, Any] | None
    ) -> Found:
        return self._recall(text, vector, "vector", k, where)

    def _recall(
        self, text: str, vector: list[float] | None, mode: str, k: int, where: dict[str, Any] | None
    ) -> Found:
        """Each hit's memory with its ``Hit.score``: its probability of relevance."""
        hits: Sequence[Hit] = self._store.recall(
            text,
            k=max(1, min(k, 10_000)),
            namespace=self.namespace,
            where=where,
            mode=mode,
            vector=vector,
        )
        return [(hit.memory, float(hit.score)) for hit in hits]

    def _hybrid(
        self, query: VectorStoreQuery, vector: list[float], where: dict[str, Any] | None, k: int
    ) -> Found:
        text = query.query_str or ""
        if query.alpha is None:  # the engine's calibrated fusion
            return self._recall(text, vector, "hybrid", k, where)
        alpha = float(query.alpha)
        if alpha <= 0.0:
            return self._text(text, k, where)
        if alpha >= 1.0:
            return self._vector(text, vector, k, where)
        depth = max(k, query.sparse_top_k or 0, query.hybrid_top_k or 0, 2 * k)
        lexical = self._recall(text, None, "text", depth, where)
        semantic = self._recall(text, vector, "vector", depth, where)
        return scoring.weighted_rrf(semantic, lexical, alpha, query.hybrid_top_k or k)

    def _mmr(
        self, vector: list[float], where: dict[str, Any] | None, k: int, threshold: float
    ) -> Found:
        candidates = self._recall("", vector, "vector", max(4 * k, 20), where)
        if not candidates:
            return []
        stored = self._store.vectors([m.id for m, _ in candidates])
        ids = [m.id for m, _ in candidates if m.id in stored]
        embeddings = [stored[i].tolist() for i in ids]
        _, chosen = get_top_k_mmr_embeddings(
            vector, embeddings, similarity_top_k=k, embedding_ids=ids, mmr_threshold=threshold
        )
        # Report each node's probability, not its MMR objective (which can be negative).
        by_id = {m.id: (m, s) for m, s in candidates}
        return [by_id[i] for i in chosen if i in by_id]

    # -- mapping -----------------------------------------------------------------

    def _where(
        self,
        filters: MetadataFilters | None,
        doc_ids: list[str] | None,
        node_ids: list[str] | None,
    ) -> dict[str, Any] | None:
        parts = [w for w in (to_where(filters),) if w is not None]
        if doc_ids:
            parts.append({REF: {"$in": list(doc_ids)}})
        if node_ids:  # an empty list (what VectorIndexRetriever sends) restricts nothing
            parts.append({NODE: {"$in": list(node_ids)}})
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"$and": parts}

    def _node(self, memory: Memory) -> BaseNode:
        user = {k: v for k, v in memory.metadata.items() if k not in _HIDDEN}
        node = metadata_dict_to_node({**user, **memory.metadata[RESERVED]}, text=memory.content)
        node.metadata = user
        return node


def memory_id(namespace: str, node_id: str) -> str:
    """The memory id of node ``node_id`` in ``namespace`` (NFC, as the store keeps it).

    A digest of both, so equal node ids of two namespaces never meet, and of a
    fixed length, so a node id as long as a file path still fits the engine's
    256-character ids. The node id itself is kept in the node's metadata.
    """
    digest = hashlib.blake2b(f"{namespace}\x00{node_id}".encode(), digest_size=16).hexdigest()
    return "li:" + digest


def _capped(run: Callable[[int], Found], k: int, cap: int) -> Found:
    """At most ``cap`` hits per source document, applied before the ``k`` cut, widening."""
    fetch = k
    while True:
        found = run(fetch)
        taken: dict[str | None, int] = {}
        chosen: Found = []
        for memory, score in found:
            ref = memory.metadata.get(REF)
            if taken.get(ref, 0) >= cap:
                continue
            taken[ref] = taken.get(ref, 0) + 1
            chosen.append((memory, score))
            if len(chosen) == k:
                return chosen
        if len(found) < fetch or fetch >= 10_000:
            return chosen
        fetch = min(10_000, fetch * 4)


def _settings_model() -> Any:
    """The model set as ``Settings.embed_model``, else the embedded one.

    Reading ``Settings.embed_model`` when none was set would make LlamaIndex
    resolve its default (a remote OpenAI model), so the field it fills is read.
    An :class:`EmbedmindEmbedding` opens the store with its registered name, so
    the store records the engine model's identity, as the CLI reopens it.
    """
    model = getattr(Settings, "_embed_model", None)
    if model is None:
        return "default"
    if isinstance(model, EmbedmindEmbedding):
        return model.embedder_name
    return model
