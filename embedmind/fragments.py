"""The fragment index: many located vectors per record (sub-document knowledge).

``store.fragments`` holds fragments of memories: each a half-open
``[start, end)`` locator in the caller's unit (characters by default), a
vector, and its text when known. ``put`` replaces all of a record's fragments
(a re-authored document never leaves a stale one), ``remove`` is idempotent,
and ``query`` returns hits best first with the per-record cap applied while
selecting. Memory recall stays record-granular; fragments are a separate
index. Vectors are durable in SQLite and indexed by a derived usearch index
under the same rules as the memory vectors, through the same machinery
(:class:`~embedmind.backend.sqlite.hnsw.VectorIndex`): the file ``NAME.mind-fragments``
is registered with its checksum in ``index_files``, trusted only when it
verifies, caught up by replaying ``fragment_log``, and saved with the memory
index's policy — inside a commit once ``SAVE_INDEX_AFTER`` changes are unsaved,
and at close, vacuum and redaction — each save trimming the log it now reflects.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from embedmind.backend.protocol import Backend, Records
from embedmind.backend.values import Space
from embedmind.checks import an_int, is_int, no_surrogates
from embedmind.drafts import query_text
from embedmind.embedders.adapt import normalized, normalized_one
from embedmind.embedders.protocol import Embedder
from embedmind.engine.commit import CommitPath
from embedmind.errors import EmbedmindError, InvalidInputError, NotFoundError
from embedmind.ids import validate_id
from embedmind.model import NamespaceScope, Where
from embedmind.query.selection import Selection
from embedmind.timestamps import resolve_now


class HasFragments(Protocol):
    """What :class:`FragmentRetriever` takes: an object with a fragment index (a :class:`Store`)."""

    @property
    def fragments(self) -> Fragments:
        """The fragment index."""
        ...


logger = logging.getLogger(__name__)
MAX_FRAGMENTS = 100_000


@dataclass(frozen=True)
class Locator:
    """A half-open ``[start, end)`` span in the caller's unit."""

    start: int
    end: int


@dataclass(frozen=True)
class FragmentHit:
    """One fragment matching a query.

    Attributes:
        record_id: The memory the fragment belongs to.
        locator: Where in the record it is.
        score: Cosine similarity of the query and the fragment's stored
            float32 vector (higher is better, within ``[-1, 1]``), exact to
            float32 round-off (about 1e-7) — not the graph's float16 estimate.
        text: The fragment's text, when known.
    """

    record_id: str
    locator: Locator
    score: float
    text: str | None


Fragment = tuple[Locator | tuple[int, int], Sequence[float] | str]
"""``(locator, vector or text)`` — text is embedded with the store's embedder."""


class Fragments:
    """The fragment index of one store (``store.fragments``)."""

    def __init__(self, backend: Backend, commit: CommitPath, embedder: Embedder | None) -> None:
        self._backend = backend
        self._commit = commit
        self._embedder = embedder
        self.index: Any = getattr(backend, "fragment_vectors", None)
        """The SQLite backend's fragment cache, for tests and tooling (``None``: none)."""

    def put(self, record_id: str, fragments: Sequence[Fragment]) -> int:
        """Replace all of a record's fragments; return how many it now holds.

        Raises:
            NotFoundError: When the record does not exist or was forgotten.
            InvalidInputError: When a locator, vector or text is invalid, or the
                store has no embedder.
        """
        dims = self._require_dims()
        memory_id = validate_id(record_id, "record_id")
        spans, vectors, texts = self._prepare(fragments, dims)
        # Through the commit path: it records no memory change, and saves the
        # fragment index file when enough is unsaved, as after every commit.
        with self._commit.write() as tx:
            session = tx.session
            key = _live_key(session.records, memory_id)
            session.records.remove_vectors(key, Space.FRAGMENTS)
            blobs = [row.astype("<f4").tobytes() for row in vectors]
            held = session.fragments.add(key, spans, blobs, texts) if spans else 0
        return held

    def remove(self, record_id: str) -> bool:
        """Drop every fragment of a record; whether there were any (idempotent)."""
        memory_id = validate_id(record_id, "record_id")
        with self._commit.write() as tx:
            session = tx.session
            existing = session.records.find(memory_id)
            if existing is None:
                return False
            session.fragments.set_source(existing.key, None)
            removed = session.records.remove_vectors(existing.key, Space.FRAGMENTS) > 0
        return removed

    def query(
        self,
        query: str | Sequence[float],
        *,
        k: int = 10,
        max_per_record: int | None = None,
        namespace: NamespaceScope = None,
        where: Where | None = None,
        now: _dt.datetime | None = None,
    ) -> list[FragmentHit]:
        """The ``k`` fragments nearest to ``query``, at most ``max_per_record`` per record.

        The cap is applied while selecting, before the ``k`` cut, and the search
        widens until ``k`` hits respecting it exist or the index is exhausted.
        Each hit's score is the float32 cosine of the (unit) query with the
        fragment's stored vector, computed from its row in SQLite, and hits are
        ordered by it (equal scores in a stable order): the HNSW graph's
        float16 copies only choose the candidates.
        """
        dims = self._require_dims()
        an_int(k, "k", low=1, high=10_000)
        if max_per_record is not None:
            an_int(
                max_per_record, "max_per_record", low=1, message="expected a positive int or None"
            )
        vector = self._query_vector(query, dims)
        selection = Selection.of(resolve_now(now), namespace, where)
        with self._backend.read() as session:
            found = session.channels.vector_top(
                vector, selection, k, cap=max_per_record, space=Space.FRAGMENTS, exact_first=k
            )
            info = session.fragments.details([h.vec_key for h in found])
        return [
            FragmentHit(info[v][0], Locator(info[v][1], info[v][2]), float(h.cosine), info[v][3])
            for h in found
            if (v := h.vec_key) in info
        ]

    def save(self, *, rebuild: bool = False) -> bool:
        """Save the index file when it lags; the store calls this at close, vacuum and redaction.

        Runs in its own write transaction, so a failure cannot undo the memory
        index's save. Nothing is written for a store that never held a fragment,
        nor when the registered file already reflects the log and this process
        did not have to rebuild it (a process that never queried fragments and
        wrote none takes no write lock).

        Args:
            rebuild: Rebuild from the stored vectors first and always write
                (vacuum: drops the tombstones of removed vectors).

        Returns:
            Whether a file was written.

        Raises:
            StorageError: When the file cannot be written or registered; the
                previous file and its registry entry stay as they were.
        """
        return self._backend.save_fragment_cache(rebuild=rebuild)

    @property
    def record_count(self) -> int:
        """Records holding at least one fragment."""
        with self._backend.read() as session:
            return session.fragments.counts()[0]

    @property
    def fragment_count(self) -> int:
        """Fragments stored."""
        with self._backend.read() as session:
            return session.fragments.counts()[1]

    @property
    def wired(self) -> bool:
        """Whether fragments can be embedded and queried (the store has an embedder)."""
        return self._embedder is not None

    def _require_dims(self) -> int:
        """The vectors' length; fragments need an embedder."""
        if self._embedder is None:
            raise InvalidInputError("fragments", "the store was opened without an embedder")
        return self._embedder.dims

    def _query_vector(self, query: str | Sequence[float], dims: int) -> Any:
        if isinstance(query, str):
            embedder = self._embedder
            assert embedder is not None  # checked by _require_dims
            return normalized_one(embedder.embed_query(query_text(query)), dims)
        return normalized_one(query, dims, "query")

    def _prepare(
        self, fragments: Sequence[Fragment], dims: int
    ) -> tuple[list[tuple[int, int]], Any, list[str | None]]:
        if isinstance(fragments, str) or not isinstance(fragments, Sequence):
            raise InvalidInputError("fragments", "expected a list of (locator, vector or text)")
        if len(fragments) > MAX_FRAGMENTS:
            raise InvalidInputError("fragments", f"more than {MAX_FRAGMENTS} for one record")
        spans, given, texts = [], [], []
        for item in fragments:
            # Validated before unpacking: a malformed item is a typed error, not a raw one.
            if isinstance(item, str) or not isinstance(item, Sequence) or len(item) != 2:
                raise InvalidInputError("fragments", "each fragment is a (locator, vector or text)")
            locator, payload = item
            spans.append(_span(locator))
            if isinstance(payload, str):
                # Stored as UTF-8 text: a lone surrogate would fail inside the transaction.
                no_surrogates(payload, "fragments")
                self._backend.check_text(payload, "fragments")
            texts.append(payload if isinstance(payload, str) else None)
            given.append(payload)
        to_embed = [t for t in texts if t is not None]
        embedder = self._embedder
        embedded = (
            iter(normalized(embedder.embed_documents(to_embed), dims))
            if to_embed and embedder
            else iter(())
        )
        vectors = [next(embedded) if isinstance(p, str) else normalized_one(p, dims) for p in given]
        return spans, vectors, texts


def _span(locator: object) -> tuple[int, int]:
    pair: Any = (locator.start, locator.end) if isinstance(locator, Locator) else locator
    bad = InvalidInputError("locator", f"expected 0 <= start < end integers, got {locator!r}")
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise bad
    start, end = pair
    if not (is_int(start) and is_int(end)):
        raise bad
    if not 0 <= start < end:
        raise bad
    return int(start), int(end)


def _live_key(records: Records, memory_id: str) -> int:
    existing = records.find(memory_id)
    if existing is None or existing.forgotten:
        raise NotFoundError(memory_id, "record")
    return existing.key


UNWIRED_MESSAGE = "fragment recall: no fragment index is wired (open the store with an embedder)"


class FragmentRecallError(EmbedmindError, RuntimeError):
    """Fragment recall could not run; the message says which step failed."""


@dataclass(frozen=True)
class Capabilities:
    """What a :class:`FragmentRetriever` can do."""

    supports_fragment_recall: bool


class FragmentRetriever:
    """Fragment recall for an engine user: fails loudly, never a silent empty list."""

    def __init__(self, store: HasFragments) -> None:
        self._fragments = store.fragments
        self.capabilities = Capabilities(self._fragments.wired)

    def retrieve(
        self, query: str, *, k: int = 10, max_per_record: int | None = None, **filters: Any
    ) -> list[FragmentHit]:
        """The best fragments for ``query`` (``k`` 10 by default, no cap by default).

        Raises:
            FragmentRecallError: When unwired, when the query embedding fails, or
                when the fragment index fails.
        """
        if not self._fragments.wired:
            raise FragmentRecallError(UNWIRED_MESSAGE)
        try:
            vector = self._fragments._query_vector(query, self._fragments._require_dims())
        except Exception as e:
            raise FragmentRecallError(f"fragment recall: query embedding failed: {e}") from e
        try:
            return self._fragments.query(
                vector.tolist(), k=k, max_per_record=max_per_record, **filters
            )
        except Exception as e:
            raise FragmentRecallError(f"fragment recall: fragment query failed: {e}") from e
