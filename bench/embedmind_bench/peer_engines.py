"""embedmind and the embedded stores a user would pick instead, behind one interface.

Every engine receives the same documents in the same order with the same
precomputed MiniLM vectors, each in a scope (a LoCoMo conversation, or one
scope for the synthetic corpus) and, for LoCoMo, with its session and time:
embedmind writes them as ``session_id`` and ``created_at``, with session
context on (the LoCoMo protocol: each turn written with its session, in
dialog order, as a chat application stores its history); Chroma and LanceDB
keep them as metadata, which their retrieval does not use. The *modes*:
embedmind ``text``, ``vector`` and ``hybrid``; LanceDB ``vector``, ``fts``
(its native full-text index, defaults: English stemming and stop words) and
``hybrid`` (that index plus vectors, its default RRF reranker); Chroma
``vector`` (its persistent client; it has no BM25). Peers are imported
lazily; a missing one is skipped.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from embedmind.model import Draft
from embedmind.store import Store
from embedmind_bench.optional import load
from embedmind_bench.vectordata import Matrix

Step = Callable[[int], object]
Search = Callable[[str, Matrix, "str | None", int], list[str]]
Session = tuple[str, _dt.datetime]
"""A document's ``(session_id, created_at)``."""
BATCH = 5_000  # under Chroma's 5,461-record cap per add


class PeerEngine(Protocol):
    """What the peers benchmark needs from an engine."""

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
    ) -> None:
        """Store every document with its vector, scope and session (when given), in batches."""

    def finish(self) -> None:
        """Build what must exist before the first query (indexes); timed apart."""

    def modes(self) -> dict[str, Search]:
        """Return ``mode -> search(text, vector, scope, k) -> ids``."""

    def close(self) -> None:
        """Flush and release files, so their size on disk is final."""


class EmbedmindPeer:
    """The engine under test, through the public API (vectors given)."""

    name = "embedmind"

    def __init__(self, root: Path, embedder: Any, *, vector_index_from: int) -> None:
        del vector_index_from  # the store decides (exact scan below 20k)
        # Session context on, as for any new store (said explicitly: the figures
        # set beside the peers are the engine's defaults). Memories without a
        # session (the synthetic corpus) are indexed alone either way.
        self._store = Store.open(
            root / "bench.mind", embedder=embedder, synchronous="NORMAL", session_context=True
        )
        self.settings: dict[str, Any] = {
            "synchronous": "NORMAL",
            "batch": BATCH,
            "session_context": self._store.stats().session_context,
        }
        self._probe: list[float] | None = None

    @property
    def store(self) -> Store:
        """The store under test (for checks on what was written)."""
        return self._store

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
        fields: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """``remember_many`` in batches of ``BATCH``, one transaction each, in the given order.

        With sessions (LoCoMo), each turn is written with its ``session_id`` and
        ``created_at``, so its lexical postings carry its dialog neighbours' terms;
        ``fields`` (the filtered workload's) go in as metadata.
        """
        for start in range(0, len(ids), BATCH):
            end = min(start + BATCH, len(ids))
            drafts = [
                Draft(
                    texts[i],
                    id=ids[i],
                    namespace=scopes[i],
                    vector=vectors[i],
                    metadata=dict(fields[i]) if fields else None,
                    session_id=sessions[i][0] if sessions else None,
                    created_at=sessions[i][1] if sessions else None,
                )
                for i in range(start, end)
            ]
            self._store.remember_many(drafts, batch_size=BATCH)
            step(end - start)
        self._probe = [float(x) for x in vectors[0]]

    def finish(self) -> None:
        """Run one recall: the HNSW index catches up with the durable vectors."""
        if self._probe is not None:
            self._store.recall("warm up", k=1, vector=self._probe)

    def modes(self) -> dict[str, Search]:
        """Text, vector and hybrid recall, the query's vector given (text ignores it)."""

        def search(mode: str) -> Search:
            def run(text: str, vector: Matrix, scope: str | None, k: int) -> list[str]:
                given = cast("Sequence[float]", vector)  # recall takes arrays too
                return self._store.recall(text, k=k, namespace=scope, vector=given, mode=mode).ids

            return run

        return {mode: search(mode) for mode in ("text", "vector", "hybrid")}

    def close(self) -> None:
        """Close the store (it saves its index file)."""
        self._store.close()


class ChromaPeer:
    """Chroma's persistent client, cosine HNSW with its defaults."""

    name = "chroma"

    def __init__(self, root: Path, embedder: Any, *, vector_index_from: int) -> None:
        del embedder, vector_index_from
        chromadb = _required("chromadb")
        settings = _required("chromadb.config").Settings(anonymized_telemetry=False)
        self._client = chromadb.PersistentClient(path=str(root / "chroma"), settings=settings)
        self._collection = self._client.create_collection(
            "bench", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        self.settings: dict[str, Any] = {"client": "PersistentClient", "hnsw": "defaults, cosine"}

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
    ) -> None:
        """``collection.add`` in batches below Chroma's cap (the session as metadata)."""
        for start in range(0, len(ids), BATCH):
            end = min(start + BATCH, len(ids))
            self._collection.add(
                ids=list(ids[start:end]),
                embeddings=vectors[start:end],
                documents=list(texts[start:end]),
                metadatas=[
                    {"scope": scopes[i], **_session_fields(sessions, i)} for i in range(start, end)
                ],
            )
            step(end - start)

    def finish(self) -> None:
        """Nothing: Chroma indexes as it adds."""
        self.settings["hnsw"] = self._collection.configuration.get("hnsw")

    def modes(self) -> dict[str, Search]:
        """Vector search, filtered by scope when one is given."""

        def run(text: str, vector: Matrix, scope: str | None, k: int) -> list[str]:
            found = self._collection.query(
                query_embeddings=vector.reshape(1, -1),
                n_results=k,
                where={"scope": scope} if scope else None,
                include=[],
            )
            return list(found["ids"][0])

        return {"vector": run}

    def close(self) -> None:
        """Drop the client (Chroma persists as it goes)."""
        self._collection = None
        self._client = None


class LancePeer:
    """LanceDB: one table, a native full-text index, and an ANN index at scale.

    Below ``vector_index_from`` rows LanceDB scans vectors exactly, as a user
    who never called ``create_index`` gets; from there an ``IVF_HNSW_SQ``
    cosine index is built, as its documentation advises for large tables.
    """

    name = "lancedb"

    def __init__(self, root: Path, embedder: Any, *, vector_index_from: int) -> None:
        del embedder
        self._lancedb = _required("lancedb")
        self._pa = _required("pyarrow")
        self._db = self._lancedb.connect(str(root / "lance"))
        self._table: Any = None
        self._index_from = vector_index_from
        self.settings: dict[str, Any] = {
            "fts": "native FTS index, defaults",
            "hybrid_reranker": "RRF (default)",
        }

    def _batch(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        sessions: Sequence[Session] | None,
    ) -> Any:
        pa = self._pa
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        columns = {
            "id": pa.array(list(ids), pa.string()),
            "text": pa.array(list(texts), pa.string()),
            "scope": pa.array(list(scopes), pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
        }
        if sessions:
            columns["session"] = pa.array([s for s, _ in sessions], pa.string())
            columns["created_at"] = pa.array([c.isoformat() for _, c in sessions], pa.string())
        return pa.table(columns)

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Matrix,
        scopes: Sequence[str],
        step: Step,
        sessions: Sequence[Session] | None = None,
    ) -> None:
        """Create the table from the first batch, append the rest (the session as columns)."""
        big = 10 * BATCH  # a columnar append: larger batches, fewer fragments
        for start in range(0, len(ids), big):
            end = min(start + big, len(ids))
            batch = self._batch(
                ids[start:end],
                texts[start:end],
                vectors[start:end],
                scopes[start:end],
                sessions[start:end] if sessions else None,
            )
            if self._table is None:
                self._table = self._db.create_table("bench", data=batch)
            else:
                self._table.add(batch)
            step(end - start)

    def finish(self) -> None:
        """Build the full-text index, and the vector index at scale."""
        index = _required("lancedb.index")
        self._table.create_index("text", config=index.FTS())
        rows = self._table.count_rows()
        self.settings["fts"] = f"native FTS index, {index.FTS()}"
        self.settings["vector_index"] = "none (exact scan)"
        if rows >= self._index_from:
            self._table.create_index("vector", config=index.IvfHnswSq(distance_type="cosine"))
            self.settings["vector_index"] = "IVF_HNSW_SQ, cosine, defaults"

    def modes(self) -> dict[str, Search]:
        """Vector search, full-text search and hybrid (vector + full text, RRF)."""

        def scoped(query: Any, scope: str | None) -> Any:
            return query.where(f"scope = '{scope}'", prefilter=True) if scope else query

        def vector(text: str, vec: Matrix, scope: str | None, k: int) -> list[str]:
            query = self._table.search(vec, vector_column_name="vector").distance_type("cosine")
            return _ids(scoped(query, scope).limit(k).select(["id"]).to_arrow())

        def fts(text: str, vec: Matrix, scope: str | None, k: int) -> list[str]:
            # _score selected: Lance warns when a scored search leaves it out.
            query = self._table.search(text, query_type="fts")
            return _ids(scoped(query, scope).limit(k).select(["id", "_score"]).to_arrow())

        def hybrid(text: str, vec: Matrix, scope: str | None, k: int) -> list[str]:
            query = self._table.search(query_type="hybrid").vector(vec).text(text)
            return _ids(scoped(query, scope).limit(k).select(["id"]).to_arrow())

        return {"vector": vector, "fts": fts, "hybrid": hybrid}

    def close(self) -> None:
        """Drop the handles (Lance writes as it goes)."""
        self._table = None


def _session_fields(sessions: Sequence[Session] | None, i: int) -> dict[str, str]:
    """Document ``i``'s session as metadata fields (none when the corpus has no sessions)."""
    if not sessions:
        return {}
    return {"session": sessions[i][0], "created_at": sessions[i][1].isoformat()}


def _ids(table: Any) -> list[str]:
    """Read the ``id`` column of an Arrow result."""
    return [str(i) for i in table.column("id").to_pylist()]


def _required(name: str) -> Any:
    """Import ``name`` or raise ``RuntimeError`` with the skip reason."""
    module, reason = load(name)
    if module is None:
        raise RuntimeError(reason)
    return module


ENGINES: dict[str, Callable[..., PeerEngine]] = {
    "embedmind": EmbedmindPeer,
    "chroma": ChromaPeer,
    "lancedb": LancePeer,
}
# The module each peer needs and its distribution (for the versions record).
REQUIRES = {"chroma": ("chromadb", "chromadb"), "lancedb": ("lancedb", "lancedb")}
