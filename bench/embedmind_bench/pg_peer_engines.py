"""embedmind on PostgreSQL and the PostgreSQL stores a user would pick instead, behind one API.

The engines of ``embedmind bench peers --backend postgres``
(:mod:`.peers_postgres`), each in its own database on the same server:

- ``embedmind-postgres``: ``Store.open("postgresql://...")``, the engine's
  defaults (session context on, as in :class:`.peer_engines.EmbedmindPeer`);
- ``embedmind-sqlite``: the same engine on a SQLite file, for reference;
- ``langgraph``: LangGraph's ``PostgresStore`` (langgraph-checkpoint-postgres)
  with its pgvector index config (HNSW, cosine, its defaults), one item per
  document, the text as the indexed field;
- ``pgvector``: langchain-postgres' ``PGVectorStore`` (the class that release
  recommends; ``PGVector`` is the deprecated one), an HNSW index with its
  defaults built after the load, as its documentation shows.

Every engine gets the same precomputed vectors: the peers embed through a
LangChain ``Embeddings`` that hands back the vectors queued for the call
(:class:`GivenVectors`), so no timing includes embedding. Each document
carries its scope (a namespace, or a metadata column for ``PGVectorStore``)
and two integer metadata fields, ``b100`` and ``b1000``, which the filtered
queries select on (1 % and 0.1 % of the corpus).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import numpy as np

from embedmind.store import Store
from embedmind_bench.peer_engines import BATCH, EmbedmindPeer, Search, Session, Step, _required
from embedmind_bench.vectordata import Matrix

Fields = dict[str, int]
"""A document's filterable metadata (``b100``, ``b1000``)."""
Filtered = Callable[[Matrix, Fields, int], list[str]]
"""``filtered(query_vector, equalities, k) -> ids``: vector search under a metadata filter."""


class PgPeer(Protocol):
    """What the PostgreSQL peers benchmark needs from an engine."""

    name: str
    settings: dict[str, Any]

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
        fields: Sequence[Fields] | None = None,
    ) -> None:
        """Store every document with its vector, scope, session and fields, in batches."""

    def finish(self) -> None:
        """Build what must exist before the first query (indexes); timed apart."""

    def modes(self) -> dict[str, Search]:
        """Return ``mode -> search(text, vector, scope, k) -> ids``."""

    def filtered(self) -> Filtered:
        """Return the vector search under a metadata equality filter."""

    def close(self) -> None:
        """Release connections and files."""


class GivenVectors:
    """A LangChain ``Embeddings`` that returns the vectors queued for the next call.

    The peers embed inside their own ``put``/``add``/``search``; the benchmark
    queues the precomputed vectors first, so every engine stores and asks
    exactly the vectors embedmind gets, and no timing includes a model.
    """

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self._queue: list[list[float]] = []

    def give(self, vectors: Matrix) -> None:
        """Queue ``vectors`` (rows) for the next embedding call."""
        self._queue = [[float(x) for x in row] for row in np.atleast_2d(vectors)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Hand back the queued vectors, one per text.

        Raises:
            RuntimeError: When the engine asks for other than the queued count
                (its vectors would not be the given ones).
        """
        if len(texts) != len(self._queue):
            raise RuntimeError(f"{len(texts)} texts to embed, {len(self._queue)} vectors queued")
        out, self._queue = self._queue, []
        return out

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """The same as :meth:`embed_documents` (LangGraph takes an embedding function)."""
        return self.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Hand back the one queued vector."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return self.embed_query(text)


class EmbedmindPgPeer(EmbedmindPeer):
    """embedmind through its public API, on PostgreSQL (a URL) or SQLite (a file).

    The SQLite peer's batching, modes and close, opened on either backend, plus
    the filtered workload's ``where`` search.
    """

    def __init__(self, name: str, location: str, embedder: Any) -> None:
        self.name = name
        sqlite = not location.startswith("postgres")
        extra: dict[str, Any] = {"synchronous": "NORMAL"} if sqlite else {}  # as the SQLite run
        self._store = Store.open(location, embedder=embedder, session_context=True, **extra)
        self.settings: dict[str, Any] = {
            "backend": "sqlite" if sqlite else "postgresql",
            "batch": BATCH,
            "session_context": self._store.stats().session_context,
            **extra,
        }
        self._probe: list[float] | None = None

    def filtered(self) -> Filtered:
        """Vector recall with a ``where`` equality filter."""

        def run(vector: Matrix, where: Fields, k: int) -> list[str]:
            given = cast("Sequence[float]", vector)
            return self._store.recall("", k=k, where=dict(where), vector=given, mode="vector").ids

        return run


class LangGraphPeer:
    """LangGraph's ``PostgresStore`` with its pgvector index (HNSW, cosine, defaults)."""

    name = "langgraph"

    def __init__(self, dsn: str, dims: int) -> None:
        postgres = _required("langgraph.store.postgres")
        self._vectors = GivenVectors(dims)
        self._ops = _required("langgraph.store.base")
        index = {"dims": dims, "embed": self._vectors, "fields": ["text"]}
        index["distance_type"] = "cosine"
        index["ann_index_config"] = {"kind": "hnsw", "vector_type": "vector"}
        self._context = postgres.PostgresStore.from_conn_string(dsn, index=index)
        self._store = self._context.__enter__()
        self._store.setup()
        self.settings: dict[str, Any] = {
            "index": "HNSW (created by setup, before the load), cosine, m/ef defaults",
            "fields": ["text"],
            "batch": BATCH,
        }

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
        fields: Sequence[Fields] | None = None,
    ) -> None:
        """``store.batch`` of ``PutOp`` per ``BATCH`` (scope as namespace, rest as value)."""
        put = self._ops.PutOp
        for start in range(0, len(ids), BATCH):
            end = min(start + BATCH, len(ids))
            ops = []
            for i in range(start, end):
                value: dict[str, Any] = {"text": texts[i], **(fields[i] if fields else {})}
                if sessions:
                    value["session"] = sessions[i][0]
                    value["created_at"] = sessions[i][1].isoformat()
                ops.append(put(_namespace(scopes[i]), ids[i], value))
            self._vectors.give(vectors[start:end])
            self._store.batch(ops)
            step(end - start)

    def finish(self) -> None:
        """Nothing: the HNSW index is maintained as items are put."""

    def modes(self) -> dict[str, Search]:
        """``store.search`` with the query (semantic search), in the scope's namespace."""

        def run(text: str, vector: Matrix, scope: str | None, k: int) -> list[str]:
            self._vectors.give(vector)
            prefix = _namespace(scope) if scope else ()
            return [item.key for item in self._store.search(prefix, query=text, limit=k)]

        return {"vector": run}

    def filtered(self) -> Filtered:
        """``store.search`` with ``filter=`` (equality on the item's value)."""

        def run(vector: Matrix, where: Fields, k: int) -> list[str]:
            self._vectors.give(vector)
            found = self._store.search((), query="?", filter=dict(where), limit=k)
            return [item.key for item in found]

        return run

    def close(self) -> None:
        """Close the store's connection."""
        self._context.__exit__(None, None, None)


class PGVectorStorePeer:
    """langchain-postgres' ``PGVectorStore``: one table, metadata columns, an HNSW index."""

    name = "pgvector"
    _table = "bench_docs"

    def __init__(self, url: str, dims: int) -> None:
        v2 = _required("langchain_postgres")
        self._indexes = _required("langchain_postgres.v2.indexes")
        self._vectors = GivenVectors(dims)
        self._engine = v2.PGEngine.from_connection_string(url=url)
        column = v2.Column
        self._engine.init_vectorstore_table(
            self._table,
            dims,
            id_column=column("langchain_id", "TEXT", nullable=False),
            metadata_columns=[
                column("scope", "TEXT"),
                column("b100", "INTEGER"),
                column("b1000", "INTEGER"),
            ],
        )
        self._store = v2.PGVectorStore.create_sync(
            self._engine,
            self._vectors,
            self._table,
            metadata_columns=["scope", "b100", "b1000"],
        )
        self.settings: dict[str, Any] = {
            "class": "PGVectorStore",
            "index": "HNSW (apply_vector_index after the load), cosine, m/ef defaults",
            "batch": BATCH,
        }

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
        fields: Sequence[Fields] | None = None,
    ) -> None:
        """``add_embeddings`` per ``BATCH`` (scope and fields as columns, the session as JSON)."""
        for start in range(0, len(ids), BATCH):
            end = min(start + BATCH, len(ids))
            metadatas: list[dict[str, Any]] = []
            for i in range(start, end):
                row: dict[str, Any] = {"scope": scopes[i], **(fields[i] if fields else {})}
                if sessions:
                    row["session"] = sessions[i][0]
                    row["created_at"] = sessions[i][1].isoformat()
                metadatas.append(row)
            rows = np.asarray(vectors[start:end], np.float64).tolist()
            self._store.add_embeddings(
                list(texts[start:end]), rows, metadatas=metadatas, ids=list(ids[start:end])
            )
            step(end - start)

    def finish(self) -> None:
        """Build the HNSW index (``apply_vector_index(HNSWIndex())``, its defaults)."""
        self._store.apply_vector_index(self._indexes.HNSWIndex())

    def modes(self) -> dict[str, Search]:
        """``similarity_search_by_vector``, filtered on the scope column when one is given."""

        def run(text: str, vector: Matrix, scope: str | None, k: int) -> list[str]:
            where = {"scope": {"$eq": scope}} if scope else None
            return self._search(vector, where, k)

        return {"vector": run}

    def filtered(self) -> Filtered:
        """``similarity_search_by_vector`` with ``filter=`` on the metadata columns."""

        def run(vector: Matrix, where: Fields, k: int) -> list[str]:
            return self._search(vector, {key: {"$eq": v} for key, v in where.items()}, k)

        return run

    def _search(self, vector: Matrix, where: dict[str, Any] | None, k: int) -> list[str]:
        query = [float(x) for x in np.asarray(vector).ravel()]
        found = self._store.similarity_search_by_vector(query, k=k, filter=where)
        return [str(doc.id) for doc in found]

    def close(self) -> None:
        """Dispose of the engine's connection pool (its event-loop thread is shared)."""
        engine = self._engine
        with contextlib.suppress(Exception):  # a peer's close must not end the run
            engine._run_as_sync(engine.close())


def _namespace(scope: str) -> tuple[str, ...]:
    """``"locomo/conv-26"`` -> ``("locomo", "conv-26")`` (LangGraph forbids dots in labels)."""
    return tuple(part.replace(".", "_") for part in scope.split("/"))


# name -> (module it needs, distribution) for skip rows and the versions record.
REQUIRES = {
    "langgraph": ("langgraph.store.postgres", "langgraph-checkpoint-postgres"),
    "pgvector": ("langchain_postgres", "langchain-postgres"),
}
ENGINES = ("embedmind-postgres", "embedmind-sqlite", "langgraph", "pgvector")
"""Every engine of the PostgreSQL run, in run order."""
