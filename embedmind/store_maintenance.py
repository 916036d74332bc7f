"""Redaction and vacuum methods of :class:`embedmind.Store`.

``redact`` replaces a memory's content in place — for credential removal or
repair — and re-derives its postings and vectors in the same transaction;
``secure_delete`` zeroes the freed space, terms used only by the old text
leave the dictionary, and a truncating WAL checkpoint removes the old pages
from the WAL, so no byte of the old content survives in any file of the
store. ``vacuum`` drops tombstones, rebuilds the file in place (never by
swapping files, which corrupts a store other processes have open) and
rebuilds the vector index.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedmind import drafts
from embedmind.checks import finite_number
from embedmind.commit import CommitPath, Committed
from embedmind.embedders.protocol import Embedder
from embedmind.errors import (
    NotFoundError,
    RedactionIncompleteError,
    StorageError,
)
from embedmind.ids import validate_id
from embedmind.lexical.index import LexicalIndex
from embedmind.model import Draft, Memory
from embedmind.storage import records
from embedmind.storage.crashpoints import crashpoint
from embedmind.storage.database import CHECKPOINT_TIMEOUT, Database
from embedmind.timestamps import resolve_now
from embedmind.vectors.embedding import Embedded, embed_contents
from embedmind.vectors.hnsw import VectorIndex
from embedmind.writes import delete_keys, drop_fragments, replace_vectors

if TYPE_CHECKING:
    from embedmind.fragments import Fragments

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VacuumReport:
    """What :meth:`embedmind.Store.vacuum` did.

    Attributes:
        removed: Tombstones reclaimed.
        bytes_before: Database plus WAL size before.
        bytes_after: Database plus WAL size after.
        wal_truncated: Whether the WAL was emptied at the end. ``False`` when a
            reader in another process held it past the wait: the space is then
            returned at a later checkpoint (a later vacuum or redaction, or
            SQLite's own), and ``bytes_after`` still counts it.
    """

    removed: int
    bytes_before: int
    bytes_after: int
    wal_truncated: bool = True


class MaintenanceMethods:
    """Mixed into :class:`embedmind.Store`; relies on its parts."""

    _db: Database
    _lexical: LexicalIndex
    _embedder: Embedder | None
    _vectors: VectorIndex | None
    fragments: Fragments
    _commit: CommitPath

    def redact(
        self,
        id: str,
        new_content: str,
        *,
        now: _dt.datetime | None = None,
        checkpoint_timeout: float = CHECKPOINT_TIMEOUT,
    ) -> Memory:
        """Replace a memory's content so that no byte of the old one survives.

        Postings, vectors and the fingerprint follow the new content; the WAL
        is checkpointed and truncated afterwards. Safe to run again if it was
        interrupted. The redaction is *complete* when the call returns: the
        change is committed and the WAL, which still holds the old pages until
        then, is truncated.

        Args:
            id: The memory to redact.
            new_content: Its new content.
            now: The instant recorded as its update.
            checkpoint_timeout: Seconds to wait in all for readers of older
                snapshots (in other processes) to let the WAL be truncated; the
                writer lock is let go between attempts, so other writers go on.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
            InvalidInputError: When an argument is invalid, ``new_content`` empty
                or only whitespace among them (redact to a placeholder such as
                ``"[redacted]"``); nothing is written.
            RedactionIncompleteError: When the change committed but the WAL could
                not be truncated within ``checkpoint_timeout`` (a reader holds a
                snapshot, or the disk is full): the old bytes stay in the WAL
                until the readers finish; run the same redact again then.
        """
        memory_id = validate_id(id)
        timeout = _timeout(checkpoint_timeout)
        at = resolve_now(now)
        prepared = drafts.prepare(Draft(new_content), at)
        embedded: list[Embedded | None] = [None]
        if self._embedder is not None:
            embedded = list(embed_contents(self._embedder, [prepared.content], [None]))
        # The commit path re-derives its fragments and notifies listeners
        # (MemoryRedacted) right after COMMIT, before the forced saves below.
        with self._commit.write() as tx:
            conn = tx.conn
            existing = records.find(conn, memory_id)
            if existing is None or existing.forgotten:
                raise NotFoundError(memory_id)
            version = records.next_write_seq(conn)
            records.set_content(conn, existing.key, prepared.content, prepared.fingerprint, at)
            self._lexical.remove(conn, existing.key, version)
            self._lexical.add(conn, [(existing.key, prepared.content)], version)
            replace_vectors(conn, existing.key, embedded[0])
            drop_fragments(conn, existing.key)  # their texts hold the old content
            crashpoint("redact")
            memory = records.select_by_keys(conn, [existing.key])[existing.key]
            tx.record(Committed("redact", redacted=(memory,)))
        self._lexical.clear_cache()
        self._save_vectors()
        crashpoint("redact-before-checkpoint")
        problem = self._db.checkpoint(timeout)
        if problem is not None:
            raise RedactionIncompleteError(memory_id, problem, timeout)
        return memory

    def vacuum(
        self,
        *,
        progress: Callable[[str], None] | None = None,
        checkpoint_timeout: float = CHECKPOINT_TIMEOUT,
    ) -> VacuumReport:
        """Reclaim the space of forgotten memories and rebuild the file in place.

        Superseded memories and every surviving id are kept; the file never
        grows; a crash at any step leaves a valid store (each step is a
        transaction).

        Args:
            progress: Called with a short description as each step starts.
            checkpoint_timeout: Seconds each of its two WAL checkpoints waits in
                all for readers of older snapshots (the writer lock let go
                between attempts); past it the WAL is left for a later
                checkpoint and the report says ``wal_truncated=False``.

        Returns:
            What was removed and the sizes before and after.

        Raises:
            InvalidInputError: When ``checkpoint_timeout`` is not a positive number.
        """
        timeout = _timeout(checkpoint_timeout)
        say = progress or (lambda _: None)
        before = self._db.file_bytes()
        say("dropping tombstones")
        # Tombstones were reported when forgotten: their removal records nothing.
        with self._commit.write() as tx:
            keys = records.forgotten_keys(tx.conn)
            delete_keys(tx.conn, self._lexical, keys)
        say("rebuilding the database file")
        self._db.checkpoint(timeout)
        self._db.vacuum()
        self._lexical.clear_cache()
        say("rebuilding the vector index")
        self._save_vectors(rebuild=True)
        say("truncating the write-ahead log")
        truncated = self._db.checkpoint(timeout) is None
        return VacuumReport(len(keys), before, self._db.file_bytes(), truncated)

    def _save_vectors(self, rebuild: bool = False) -> None:
        """Save both derived indexes; never raises, since the change they follow has committed.

        A failure (the writer lock busy, SQLite failing to register the file;
        the file write itself is already absorbed by ``VectorIndex.save``) is
        logged: the indexes are caches, and the next open replays or rebuilds.
        """
        try:
            if self._vectors is not None:
                with self._db.write() as conn:
                    if rebuild:
                        self._vectors.rebuild(conn)
                    self._vectors.save(conn, force=rebuild)
        except StorageError as e:
            logger.warning("could not save the vector index of %s: %s", self._db.path, e)
        try:  # its own transaction: a failed fragment save never undoes the vector save
            self.fragments.save(rebuild=rebuild)  # vacuum compacts it, redaction rewrites it
        except StorageError as e:
            logger.warning("could not save the fragment index of %s: %s", self._db.path, e)


def _timeout(value: object) -> float:
    """Validate a ``checkpoint_timeout`` (seconds, positive and finite)."""
    return finite_number(
        value, "checkpoint_timeout", positive=True, message="expected a positive number of seconds"
    )
