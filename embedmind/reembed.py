"""Re-embedding a store with another model, resumable after a crash.

Memories are re-embedded in key order, one transaction per batch; each batch
replaces its memories' vectors and advances a cursor stored in the file, so a
run that is killed resumes where it stopped. Fragments follow in the same way
with a cursor of their own: each record's fragments are replaced whole, their
stored texts embedded again. The model identity switches in the last
transaction, and the derived index files are dropped (the next open rebuilds
them). Run it while no other process recalls by vector: until the switch, the
store holds vectors of both models.

A fragment given as a vector has no text to embed again. Keeping its vector
would mix two models in one index (and break fragment queries when the
dimensions differ), and dropping it by default would destroy what the caller
put, so a re-embed refuses to start while such fragments exist unless told to
drop them.

``missing=True`` is the narrow case: only live memories without any vector
(written while the store was open with ``embedder=None``) are embedded, with
the store's own model, batch by batch; the vectors join the change log, so
the index files stay valid and catch up on the next open.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from tqdm.auto import tqdm

from embedmind.backend.protocol import Backend, ReadSession, WriteSession
from embedmind.backend.values import OpenOptions, Space
from embedmind.checks import an_int
from embedmind.embedders.adapt import DEFAULT, identity, normalized, resolve
from embedmind.embedders.protocol import Embedder
from embedmind.errors import ConflictError, EmbedderMismatchError, InvalidInputError
from embedmind.plugins import backend_for, registered_name, resolve_embedder
from embedmind.vectors.embedding import embed_contents

logger = logging.getLogger(__name__)

_TARGET = "reembed.target"
_CURSOR = "reembed.cursor"
_FRAGMENT_CURSOR = "reembed.fragment_cursor"


def reembed(
    path: str | os.PathLike[str],
    embedder: object = DEFAULT,
    *,
    batch_size: int = 256,
    show_progress: bool = False,
    drop_vector_fragments: bool = False,
    missing: bool = False,
) -> int:
    """Re-embed every live memory and every fragment of the store at ``path`` with ``embedder``.

    With ``missing=True``, embed only the live memories that have no vector
    (written while the store was open with ``embedder=None``), with the
    store's own model: nothing else changes, and an interrupted run resumes by
    running it again (each batch commits, and what has a vector is skipped).

    Args:
        path: The store file.
        embedder: The new model (default: the embedded all-MiniLM-L6-v2).
        batch_size: Memories per transaction; for fragments, about this many
            per transaction, whole records.
        show_progress: Show progress bars.
        drop_vector_fragments: Drop the fragments that were given as vectors
            (they have no text to embed again) instead of refusing to start.
        missing: Only fill in the live memories without a vector; ``embedder``
            must be the store's model (a store that never had one takes it).

    Returns:
        How many memories were re-embedded in this run.

    Raises:
        InvalidInputError: When ``embedder`` is ``None`` or ``batch_size`` invalid.
        ConflictError: When an unfinished re-embed towards another model
            exists (with ``missing``: any unfinished re-embed), or fragments
            given as vectors exist and ``drop_vector_fragments`` is false;
            nothing is changed then.
        EmbedderMismatchError: With ``missing``, when the store's vectors come
            from another model than ``embedder``.

    Example:
        >>> import embedmind, tempfile, os
        >>> from embedmind.embedders.hashing import HashingEmbedder
        >>> path = os.path.join(tempfile.mkdtemp(), "m.mind")
        >>> with embedmind.Store.open(path, embedder=HashingEmbedder(32)) as store:
        ...     _ = store.remember("Alice prefers green tea")
        >>> with embedmind.Store.open(path, embedder=None) as store:
        ...     _ = store.remember("Bob prefers coffee")
        >>> embedmind.reembed(path, HashingEmbedder(32), missing=True)
        1
    """
    model = resolve(resolve_embedder(embedder))
    if model is None:
        raise InvalidInputError("embedder", "re-embedding needs an embedder")
    an_int(batch_size, "batch_size", low=1)
    target = identity(model)
    location = os.fspath(path)
    backend: Backend = backend_for(location).open(OpenOptions(location))
    if missing:
        try:
            return _fill_missing(backend, model, target, batch_size, show_progress)
        finally:
            backend.close()
    try:
        with backend.write() as session:
            _claim(session, str(path), repr(sorted(target.items())), drop_vector_fragments)
        done = _memories(backend, model, batch_size, show_progress)
        _fragments(backend, model, batch_size, show_progress, drop_vector_fragments)
        with backend.write() as session:
            session.meta.write_identity(target)
            session.forget_caches()
            for key in (_TARGET, _CURSOR, _FRAGMENT_CURSOR):
                session.meta.set(key, None)
        backend.remove_cache_files()
    finally:
        backend.close()
    return done


def _claim(session: WriteSession, path: str, wanted: str, drop_vector_fragments: bool) -> None:
    """Check that this run may start (or resume) and record its target model."""
    started = session.meta.get(_TARGET)
    if started is not None and started != wanted:
        raise ConflictError(
            path, f"an unfinished re-embed towards another model exists ({started})"
        )
    if not drop_vector_fragments:
        _refuse_vector_fragments(session, path)
    session.meta.set(_TARGET, wanted)


def _refuse_vector_fragments(session: ReadSession, path: str) -> None:
    count, owners, some = session.fragments.given_as_vectors()
    if count:
        examples = ", ".join(map(repr, some)) + (", ..." if owners > len(some) else "")
        raise ConflictError(
            path,
            f"{count} fragment(s) of {owners} record(s) ({examples}) were given as vectors "
            "and have no text to embed with the new model: remove them "
            "(store.fragments.remove) and put them again afterwards, or pass "
            "drop_vector_fragments=True to drop them",
        )


def _memories(backend: Backend, model: Embedder, batch_size: int, show_progress: bool) -> int:
    """Re-embed the memories after the cursor, one transaction per batch; return how many."""
    with backend.read() as session:
        cursor = int(session.meta.get(_CURSOR) or 0)
        total = session.records.live_count()
    done = 0
    with tqdm(total=total, disable=not show_progress, unit="memory") as bar:
        while True:
            with backend.read() as session:
                batch = session.records.contents_after(cursor, batch_size)
            if not batch:
                return done
            embedded = embed_contents(model, [c for _, c in batch], [None] * len(batch))
            with backend.write() as session:
                for (key, _), vectors in zip(batch, embedded, strict=True):
                    session.records.remove_vectors(key)
                    session.records.put_vectors(key, vectors.spans, vectors.blobs())
                cursor = batch[-1][0]
                session.meta.set(_CURSOR, str(cursor))
            done += len(batch)
            bar.update(len(batch))


def _fill_missing(
    backend: Backend,
    model: Embedder,
    target: dict[str, str],
    batch_size: int,
    show_progress: bool,
) -> int:
    """Embed the live memories without a vector, one transaction per batch; return how many."""
    with backend.write() as session:
        started = session.meta.get(_TARGET)
        if started is not None:
            raise ConflictError(
                backend.path,
                f"an unfinished re-embed exists ({started}): finish it first by running "
                "reembed(path, embedder) with its model (it embeds these memories too)",
            )
        recorded = session.meta.identity()
        if recorded and recorded != target:
            name = registered_name(target.get("model_id", ""))
            raise EmbedderMismatchError(backend.path, recorded, target, name=name)
        if not recorded:  # a store that never had a model: this one becomes its model
            session.meta.write_identity(target)
        total = session.channels.missing_vector_count()
    done, cursor = 0, 0
    with tqdm(total=total, disable=not show_progress, unit="memory") as bar:
        while True:
            with backend.read() as session:
                batch = session.channels.missing_contents(cursor, batch_size)
            if not batch:
                return done
            embedded = embed_contents(model, [c for _, c in batch], [None] * len(batch))
            with backend.write() as session:
                # Checked again: another process may have written or forgotten one meanwhile.
                still = dict(session.channels.missing_contents(keys=[k for k, _ in batch]))
                for (key, content), vectors in zip(batch, embedded, strict=True):
                    if still.get(key) == content:
                        session.records.put_vectors(key, vectors.spans, vectors.blobs())
                        done += 1
            cursor = batch[-1][0]
            bar.update(len(batch))


def _fragments(
    backend: Backend, model: Embedder, batch_size: int, show_progress: bool, drop: bool
) -> None:
    """Re-embed the fragments of the records after the fragment cursor, whole records at a time.

    A record's fragments are removed and added again (new vec_keys), as the
    memories' vectors are: replaying the change log then replaces them in any
    index, where an in-place update would leave the old vectors indexed. A
    record whose fragments changed between the read and the write (another
    process put them meanwhile) ends the batch early and is read again.
    """
    with backend.read() as session:
        cursor = int(session.meta.get(_FRAGMENT_CURSOR) or 0)
        total = session.fragments.counts()[1]
    dropped: dict[int, int] = {}
    with tqdm(total=total, disable=not show_progress, unit="fragment") as bar:
        while True:
            with backend.read() as session:
                batch = session.fragments.texts_after(cursor, batch_size)
            if not batch:
                break
            texts = [text for _, items in batch for _, _, text in items if text is not None]
            if not drop and len(texts) < sum(len(items) for _, items in batch):
                with backend.read() as session:  # put meanwhile by another process
                    _refuse_vector_fragments(session, backend.path)
            vectors, advanced = _embedded(model, texts), 0
            with backend.write() as session:
                for key, items in batch:
                    if session.fragments.texts_of(key) != items:
                        break  # changed since read: read again, not overwrite the change
                    kept = [(start, end, text) for start, end, text in items if text is not None]
                    session.records.remove_vectors(key, Space.FRAGMENTS)
                    if kept:
                        spans = [(start, end) for start, end, _ in kept]
                        blobs = [next(vectors) for _ in kept]
                        session.fragments.add(key, spans, blobs, [t for _, _, t in kept])
                    if len(kept) < len(items):
                        dropped[key] = len(items) - len(kept)
                    cursor, advanced = key, advanced + len(items)
                session.meta.set(_FRAGMENT_CURSOR, str(cursor))
            bar.update(advanced)
    if dropped:
        logger.warning(
            "re-embedding %s dropped %d fragments given as vectors, of %d records",
            backend.path, sum(dropped.values()), len(dropped),
        )  # fmt: skip


def _embedded(model: Embedder, texts: list[str]) -> Iterator[bytes]:
    """The new model's vectors of ``texts``, in the storage format, in order."""
    if not texts:
        return iter(())
    rows = normalized(model.embed_documents(texts), model.dims)
    return (row.astype("<f4").tobytes() for row in rows)
