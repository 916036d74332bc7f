"""``EmbedmindStore``: LangGraph's long-term memory ``BaseStore`` over embedmind.

Namespace tuples map onto embedmind namespaces under one root with exact
segment semantics (see :mod:`langchain_embedmind.store_namespaces`). An item's
value is the memory's metadata (so ``filter`` uses embedmind's ``where``);
each indexed field path holds one vector in the fragment index, and a query
search ranks items by their best field, scored by its cosine (see
:mod:`langchain_embedmind.store_index`). TTLs follow LangGraph's ``TTLConfig``
(see :mod:`langchain_embedmind.store_ttl`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import datetime as dt
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from embedmind import Memory, Store
from embedmind.query.scope import normalize_namespace
from langchain_embedmind import store_namespaces as names
from langchain_embedmind import store_ttl
from langchain_embedmind.store_index import (
    WHOLE_VALUE,
    Indexing,
    as_embeddings,
    as_vectors,
    field_texts,
    resolve_index,
    value_text,
)

ROOT = "langgraph"
RESERVED = "__langgraph__"
MAX_K = 10_000  # the engine's largest k for recall and fragment queries


@dataclass
class _Embedded:
    """The vectors a batch needs, computed before it runs (sync or async alike)."""

    fields: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    documents: dict[int, list[list[float]]] = field(default_factory=dict)
    queries: dict[str, list[float]] = field(default_factory=dict)


class EmbedmindStore(BaseStore):
    """LangGraph long-term memory backed by an embedmind store.

    Args:
        store: The open embedmind store.
        index: LangGraph's ``IndexConfig`` (``embed``, ``dims``, ``fields``).
            ``embed`` must be the store's own model (checked with a probe
            text); leave it out to use the store's. ``None``: the store's
            embedder over the whole value (``fields=["$"]``), or BM25 ranking
            without scores for a store opened with ``embedder=None``.
        ttl: LangGraph's ``TTLConfig`` (minutes).
        root: The embedmind namespace all items live under.

    Raises:
        InvalidInputError: When ``index`` does not fit the store; the message
            says what to write instead.
        ValueError: When ``ttl`` has an unknown key or a non-positive number.

    Example:
        >>> import embedmind
        >>> from embedmind.embedders.hashing import HashingEmbedder
        >>> with embedmind.Store.open(":memory:", embedder=HashingEmbedder(64)) as engine:
        ...     store = EmbedmindStore(engine, index={"dims": 64, "fields": ["text"]})
        ...     store.put(("users", "ana"), "1", {"text": "likes green tea"})
        ...     [(i.key, round(i.score, 3)) for i in store.search(("users",), query="green tea")]
        [('1', 0.816)]
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: Store,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        root: str = ROOT,
    ) -> None:
        self.store = store
        # In NFC, as the engine stores it: items are matched by their stored namespace.
        self.root = normalize_namespace(root, "root")
        self._indexing: Indexing | None = resolve_index(store, index)
        self.index_config: dict[str, Any] | None = (
            None if self._indexing is None else self._indexing.config
        )
        self.embeddings = None if self._indexing is None else self._indexing.embeddings
        self.ttl_config = store_ttl.check_ttl_config(ttl)
        self._sweeper = store_ttl.Sweeper(store)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        root: str = ROOT,
    ) -> EmbedmindStore:
        """Open the store file at ``path`` with ``index["embed"]`` as its embedder.

        The one-line form for LangGraph users: the engine and the index share
        the model. Close it with :meth:`close` (or use it as a context manager).
        """
        embed = None if index is None else index.get("embed")
        embedder: Any = "default" if embed is None else as_embeddings(embed)
        store = Store.open(path, embedder=embedder)
        try:
            return cls(store, index=index, ttl=ttl, root=root)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Stop the sweeper and close the embedmind store."""
        self.stop_ttl_sweeper()
        self.store.close()

    def __enter__(self) -> EmbedmindStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- TTL -----------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now (and any other expired memory of the file)."""
        return self._sweeper.sweep()

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> cf.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` in a daemon thread.

        Args:
            sweep_interval_minutes: Defaults to the TTL config's, else 5 minutes.

        Returns:
            A future that completes when the sweeper stops.
        """
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        minutes = sweep_interval_minutes or configured or store_ttl.DEFAULT_SWEEP_MINUTES
        return self._sweeper.start(minutes)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; whether it stopped within ``timeout`` seconds."""
        return self._sweeper.stop(timeout)

    # -- operations ----------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run Get, Search, Put and ListNamespaces operations in order."""
        listed, embedded = self._plan(ops)
        if self._indexing is not None:
            embeddings = self._indexing.embeddings
            for i, texts in embedded.fields.items():
                raw = embeddings.embed_documents([t for _, t in texts])
                embedded.documents[i] = as_vectors(raw, texts)
            for query in embedded.queries:
                embedded.queries[query] = embeddings.embed_query(query)
        return self._run(listed, embedded)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The same operations: embedding awaited, storage in a worker thread."""
        listed, embedded = self._plan(ops)
        if self._indexing is not None:
            embeddings = self._indexing.embeddings
            for i, texts in embedded.fields.items():
                raw = await embeddings.aembed_documents([t for _, t in texts])
                embedded.documents[i] = as_vectors(raw, texts)
            for query in embedded.queries:
                embedded.queries[query] = await embeddings.aembed_query(query)
        return await asyncio.to_thread(self._run, listed, embedded)

    def _plan(self, ops: Iterable[Op]) -> tuple[list[Op], _Embedded]:
        """Validate every op first, and list the texts to embed (nothing runs on a bad op)."""
        listed = list(ops)
        embedded = _Embedded()
        for i, op in enumerate(listed):
            if not isinstance(op, GetOp | SearchOp | PutOp | ListNamespacesOp):
                raise ValueError(f"unknown operation {type(op).__name__}")
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                self._namespace(op.namespace)
                # Without an index the texts still feed BM25 (a text-only store).
                default = WHOLE_VALUE if self._indexing is None else self._indexing.fields_default
                texts = field_texts(op, default)
                if texts:
                    embedded.fields[i] = texts
            elif isinstance(op, SearchOp) and op.query and self._indexing is not None:
                embedded.queries[op.query] = []
        return listed, embedded

    def _run(self, ops: Sequence[Op], embedded: _Embedded) -> list[Result]:
        results: list[Result] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, embedded))
            elif isinstance(op, PutOp):
                self._put(op, embedded.fields.get(i, []), embedded.documents.get(i, []))
                results.append(None)
            else:
                results.append(self._list(op))
        return results

    # -- mapping -----------------------------------------------------------------

    def _namespace(self, namespace: tuple[str, ...]) -> str:
        if not isinstance(namespace, tuple) or not namespace:
            raise InvalidNamespaceError(
                "a namespace is a non-empty tuple of labels, e.g. ('users', 'ana'); "
                f"got {namespace!r}"
            )
        return names.to_namespace(self.root, namespace)

    def _item(self, memory: Memory, score: float | None = None, search: bool = False) -> Item:
        value = {k: v for k, v in memory.metadata.items() if k != RESERVED}
        fields: dict[str, Any] = {
            "namespace": names.to_labels(self.root, memory.namespace),
            "key": memory.metadata[RESERVED]["key"],
            "value": value,
            "created_at": memory.created_at,
            "updated_at": memory.updated_at,
        }
        return SearchItem(**fields, score=score) if search else Item(**fields)

    # -- reads and writes ----------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        namespace = self._namespace(op.namespace)
        found = self.store.get_many([names.item_id(namespace, op.key)])
        # get_many honours nothing but ids: expiry is checked here, as recall would.
        live = [m for m in found if m.namespace == namespace and not _expired(m)]
        if not live:
            return None
        if op.refresh_ttl:
            live = self._refreshed(live)
        return self._item(live[0])

    def _refreshed(self, memories: list[Memory]) -> list[Memory]:
        store_ttl.refresh(self.store, memories, RESERVED)
        if not any(m.expires_at is not None for m in memories):
            return memories
        again = {m.id: m for m in self.store.get_many([m.id for m in memories])}
        return [again.get(m.id, m) for m in memories]

    def _put(self, op: PutOp, fields: list[tuple[str, str]], vectors: list[list[float]]) -> None:
        namespace = self._namespace(op.namespace)
        memory_id = names.item_id(namespace, op.key)
        if op.value is None:
            self.store.delete(memory_id)
            return
        if not isinstance(op.key, str) or not op.key:
            raise ValueError("a key is a non-empty str")
        indexed = [label for label, _ in fields]
        # Stores written before the engine scored fragments exactly also hold a
        # "vectors" key here (base64 copies of the field vectors): no read uses it.
        meta = {"key": op.key, store_ttl.TTL_KEY: op.ttl, "paths": indexed}
        # BM25 reads the indexed texts; an unindexed item keeps its whole value
        # as text (content is never empty), and is still never ranked by a query.
        content = "\n".join(text for _, text in fields) or value_text(op.value)
        self.store.remember(
            content,
            id=memory_id,
            namespace=namespace,
            metadata={**op.value, RESERVED: meta},
            ttl=store_ttl.as_timedelta(op.ttl),
            vector=vectors[0] if vectors else None,  # reuse a field's vector: no second embed
            agent="langgraph",
        )
        if vectors:
            self.store.fragments.put(memory_id, [((i, i + 1), v) for i, v in enumerate(vectors)])
        elif self.store.fragments.wired:
            self.store.fragments.remove(memory_id)  # an update to index=False drops old vectors

    def _scope(self, prefix: tuple[str, ...]) -> str:
        return f"{self._namespace(prefix)}/*" if prefix else f"{self.root}/*"

    def _search(self, op: SearchOp, embedded: _Embedded) -> list[SearchItem]:
        scope = self._scope(op.namespace_prefix)
        where = dict(op.filter) if op.filter else None
        if op.offset < 0 or op.limit < 0:
            raise ValueError("limit and offset are non-negative ints")
        found: list[tuple[Memory, float | None]]
        if not op.query:
            listing = self.store.iter(scope, where=where)
            found = [(m, None) for _, m in zip(range(op.offset + op.limit), listing, strict=False)]
            found = found[op.offset :]
        else:
            found = self._ranked(op, scope, where, embedded)
        memories = [m for m, _ in found]
        if op.refresh_ttl and memories:
            memories = self._refreshed(memories)
        return [
            self._item(m, score, search=True)  # type: ignore[misc]
            for m, (_, score) in zip(memories, found, strict=True)
        ]

    def _ranked(
        self, op: SearchOp, scope: str, where: dict[str, Any] | None, embedded: _Embedded
    ) -> list[tuple[Memory, float | None]]:
        """Scored items best first, then (when those run out) the unscored ones, score ``None``."""
        wanted = op.offset + op.limit
        if wanted == 0:
            return []
        scored = (
            self._by_vectors(embedded.queries[op.query or ""], wanted, scope, where)
            if self._indexing is not None
            else self._by_text(op.query or "", wanted, scope, where)
        )
        if len(scored) >= wanted:
            return scored[op.offset : wanted]
        seen = {m.id for m, _ in scored}
        rest = (m for m in self.store.iter(scope, where=where) if m.id not in seen)
        tail = [(m, None) for _, m in zip(range(wanted - len(scored)), rest, strict=False)]
        return (scored + tail)[op.offset : wanted]

    def _by_vectors(
        self, query: list[float], wanted: int, scope: str, where: dict[str, Any] | None
    ) -> list[tuple[Memory, float | None]]:
        # No over-fetch: the engine applies max_per_record before the k cut and
        # ranks by exact cosines, so its top `wanted` records are the answer.
        hits = self.store.fragments.query(
            query, k=min(wanted, MAX_K), max_per_record=1, namespace=scope, where=where
        )
        scores = {h.record_id: h.score for h in hits}
        return [(m, scores[m.id]) for m in self.store.get_many(list(scores))]

    def _by_text(
        self, query: str, wanted: int, scope: str, where: dict[str, Any] | None
    ) -> list[tuple[Memory, float | None]]:
        # A store without an embedder: BM25 orders the matches, which have no similarity.
        hits = self.store.recall(
            query, k=min(wanted, MAX_K), namespace=scope, where=where, mode="text"
        )
        return [(h.memory, None) for h in hits if h.memory.metadata[RESERVED].get("paths", [""])]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [
            names.to_labels(self.root, activity.namespace)
            for activity in self.store.namespaces()
            if activity.namespace.startswith(self.root + "/")
        ]
        for condition in op.match_conditions or ():
            path = tuple(condition.path)
            namespaces = [n for n in namespaces if _matches(n, condition.match_type, path)]
        if op.max_depth is not None:
            namespaces = [n[: op.max_depth] for n in namespaces]
        unique = sorted(set(namespaces))
        return unique[op.offset : op.offset + op.limit]


def _expired(memory: Memory) -> bool:
    return memory.expires_at is not None and memory.expires_at <= dt.datetime.now(dt.timezone.utc)


def _matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if kind == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
