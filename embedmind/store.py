"""The :class:`Store` facade: the only public engine API.

It validates arguments, opens transactions and composes the parts (records,
lexical index, recall); it holds no SQL and no scoring math.
"""

from __future__ import annotations

import logging
import os
from types import TracebackType
from typing import Any

from embedmind import exit_close
from embedmind.backend.locations import masked
from embedmind.backend.protocol import Backend
from embedmind.backend.values import OpenOptions, Synchronous
from embedmind.embedders.adapt import DEFAULT, identity, resolve
from embedmind.embedders.protocol import Embedder
from embedmind.engine.commit import CommitPath, Parts, save_index_after
from embedmind.engine.state import Engine
from embedmind.errors import (
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from embedmind.fragments import Fragments
from embedmind.plugins import backend_for, built_in_backend, embedder_factory, resolve_embedder
from embedmind.policies import EvictionPolicy, FragmentPolicy
from embedmind.store_graph import GraphMethods
from embedmind.store_lifecycle import LifecycleMethods
from embedmind.store_maintenance import MaintenanceMethods
from embedmind.store_reads import ReadMethods
from embedmind.store_transfer import TransferMethods
from embedmind.store_writes import WriteMethods

logger = logging.getLogger(__name__)


class Store(
    WriteMethods, ReadMethods, GraphMethods, LifecycleMethods, MaintenanceMethods, TransferMethods
):
    """An embedmind store: one SQLite file of memories and their indexes.

    Open with :meth:`Store.open`; use as a context manager to close it.

    Examples:
        >>> store = Store.open(":memory:", embedder=None)
        >>> _ = store.remember("Alice prefers green tea", namespace="user/alice")
        >>> [hit.content for hit in store.recall("what tea does alice like?", mode="text")]
        ['Alice prefers green tea']
        >>> store.close()
    """

    def __init__(
        self,
        backend: Backend,
        embedder: Embedder | None,
        metrics: Any = None,
        fragment_policy: FragmentPolicy | None = None,
        eviction: EvictionPolicy | None = None,
    ) -> None:
        if embedder is not None:
            backend.configure_vectors(embedder.dims)
        # The SQLite backend's handles, for the tests and tooling that inspect
        # its files; the engine reaches the store only through self._engine.
        self._backend = backend
        self._db = getattr(backend, "database", None)
        self._lexical = getattr(backend, "lexical", None)
        self._vectors = getattr(backend, "vectors", None)
        chunker = None if fragment_policy is None else fragment_policy.resolve()
        commit = CommitPath(
            Parts(
                backend, embedder, metrics, eviction, fragment_policy, chunker, self,
                save_index_after,
            )
        )  # fmt: skip
        self._commit = commit
        self.fragments = Fragments(backend, commit, embedder)
        """The fragment index (see :class:`embedmind.fragments.Fragments`)."""
        self._engine = Engine(backend, commit, embedder, metrics, self.fragments)
        exit_close.track(self)

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this store was opened with (``None``: text only)."""
        return self._engine.embedder

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        embedder: object = DEFAULT,
        synchronous: Synchronous = "FULL",
        busy_timeout: float = 10.0,
        metrics: Any = None,
        fragment_policy: FragmentPolicy | None = None,
        eviction: EvictionPolicy | None = None,
        session_context: bool | None = None,
        date_words: bool | None = None,
        create: bool = True,
    ) -> Store:
        """Open (creating if missing) the store at ``path``; ``":memory:"`` is a throwaway.

        Args:
            path: The store file, e.g. ``"memories.mind"``, or ``":memory:"``.
            embedder: By default the model the store was created with when it is
                a registered embedder, else the embedded all-MiniLM-L6-v2; a
                registered name; any object with
                ``embed_documents``/``embed_query`` (embedmind's own, a plain
                class, a LangChain ``Embeddings``) or a LlamaIndex embedding;
                ``None`` for a text-only store.
            synchronous: ``"FULL"`` (default): a returned write survives power
                loss. ``"NORMAL"``: faster, and a returned write survives a process
                crash but may be lost on power loss.
            busy_timeout: Seconds a writer waits for the lock before
                :class:`~embedmind.errors.StoreBusyError`.
            metrics: Optional observer; any of its methods ``upsert(op, tier)``
                (content stored: ``op`` is ``"write"``, ``"import"`` or
                ``"redact"``), ``update(op, tier)`` (changed in place: ``op``
                names the method, e.g. ``"move"``), ``delete()`` (evictions
                included), ``soft_delete()``, ``sweep_expired(tier)``,
                ``dedup_hit()`` and ``active_by_tier(tier, n)`` is called after
                the matching change commits (see :mod:`embedmind.engine.commit`).
            fragment_policy: Chunk and embed every written memory in its scope
                into the fragment index, best effort (failures are logged with
                the record id and never fail the write).
            eviction: Keep at most ``max_records`` memories per namespace (and
                tier) in its scope, evicting the oldest in the same transaction.
            session_context: Index each memory that has a ``session_id`` with
                its dialog neighbours' words too (the previous and next memory
                of its namespace and session, by ``created_at``), so an answer
                that does not repeat the question's words is found through
                the question before it; content, vectors and ``get`` stay its
                own. ``None`` (default) keeps the store's setting: on for a
                store created by this release, off for an older one. ``True``
                or ``False`` sets it; a change re-indexes every memory's BM25
                postings in one write transaction, holding the writer lock
                (other writers wait, readers do not). On LoCoMo it
                lifts hybrid recall@10 from 0.666 to 0.731 and hit@10 from
                0.730 to 0.802 (``docs/benchmarks.md``).
            date_words: Index each memory's ``created_at`` date (UTC) as the
                words a question would name it by: day number, English month
                name and year ("7 May 2023"), so "what happened on 7 May
                2023" finds what was said that day by text. Index terms only:
                content, snippets and vectors are unchanged. ``None``
                (default) keeps the store's setting: on for a store created
                by this release, off for an older one; ``True`` or ``False``
                sets it, re-indexing as ``session_context`` does. On LoCoMo
                it lifts text recall@10 by 0.020, no fold worse
                (``docs/benchmarks.md``).
            create: ``False`` opens only a store that exists, and creates
                nothing otherwise: a mistyped path is an error, not a new
                empty store (on PostgreSQL, a schema no store was written to).

        Returns:
            The open store.

        Raises:
            NotFoundError: When ``create`` is false and no store is at ``path``.
            InvalidInputError: When an argument is invalid.
            SchemaVersionError: When the file was written by a newer embedmind.
            EmbedderMismatchError: When the store's vectors come from another model.
            StorageError: When the file cannot be opened.
            StoreBusyError: When ``session_context`` or ``date_words`` changes a setting and the
                writer lock is not obtained within ``busy_timeout``.
        """
        if session_context is not None and not isinstance(session_context, bool):
            raise InvalidInputError("session_context", "expected True, False or None")
        if date_words is not None and not isinstance(date_words, bool):
            raise InvalidInputError("date_words", "expected True, False or None")
        if not isinstance(create, bool):
            raise InvalidInputError("create", "expected True or False")
        backend = _open_backend(path, synchronous, busy_timeout, create)
        try:
            if embedder == DEFAULT:
                embedder = _recorded_model(backend) or DEFAULT
            resolved = resolve(resolve_embedder(embedder))
            if resolved is not None:
                _check_identity(backend, resolved)
            elif fragment_policy is not None:
                raise InvalidInputError("fragment_policy", "fragments need an embedder")
            store = cls(backend, resolved, metrics, fragment_policy, eviction)
            if session_context is not None:
                store._set_session_context(session_context)
            if date_words is not None:
                store._set_date_words(date_words)
            return store
        except BaseException:
            backend.close()  # a store that failed to open holds no file handle or lock
            raise

    @property
    def path(self) -> str:
        """The store file's absolute path, or ``":memory:"``."""
        return self._backend.path

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        return self._backend.schema_version

    def _set_session_context(self, on: bool) -> None:
        """Turn session context on or off, re-indexing the postings when it changes."""
        with self._commit.write() as tx:  # the postings change, no memory: nothing to record
            tx.session.sessions.set_context(on)

    def _set_date_words(self, on: bool) -> None:
        """Turn date words on or off, re-indexing the postings when it changes."""
        with self._commit.write() as tx:
            tx.session.sessions.set_dates(on)

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Save the vector and fragment indexes if they moved on, then close the store.

        Further calls raise :class:`~embedmind.errors.StoreClosedError`;
        closing again does nothing, like closing a file twice.
        """
        if self._backend.closed:
            return
        try:
            self._backend.save_vector_cache()
            try:  # its own transaction: a failed fragment save never undoes the vector save
                self.fragments.save()
            except (StorageError, OSError) as e:
                logger.warning("could not save the fragment index of %s: %s", self.path, e)
        finally:
            self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"


def _open_backend(
    path: str | os.PathLike[str], synchronous: Synchronous, busy_timeout: float, create: bool
) -> Backend:
    """Open the store at ``path`` with the registered backend that claims it.

    Raises:
        NotFoundError: When ``create`` is false and the backend finds no store there.
    """
    location = os.fspath(path) if isinstance(path, str | os.PathLike) else path
    factory = backend_for(location) if isinstance(location, str) else built_in_backend()
    if not create and not factory.exists(location):
        shown = masked(location) if isinstance(location, str) else repr(location)
        raise NotFoundError(
            shown,
            message=f"store {shown!r} does not exist (nothing was created): fix the path, "
            "or pass create=True to create it",
        )
    return factory.open(OpenOptions(location, synchronous, busy_timeout))  # type: ignore[no-any-return]


def _recorded_model(backend: Backend) -> str | None:
    """The store's recorded model, when it is a registered embedder (reopen with it by default)."""
    with backend.read() as session:
        recorded = session.meta.identity().get("model_id")
    return recorded if recorded is not None and embedder_factory(recorded) else None


def _check_identity(backend: Backend, embedder: Embedder) -> None:
    given = identity(embedder)
    with backend.write() as session:
        recorded = session.meta.identity()
        if not recorded:
            session.meta.write_identity(given)
        elif recorded != given:
            raise EmbedderMismatchError(backend.path, recorded, given)
