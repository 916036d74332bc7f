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
from embedmind.embedders.protocol import Embedder
from embedmind.errors import NotFoundError, StorageError
from embedmind.ids import validate_id
from embedmind.lexical.index import LexicalIndex
from embedmind.model import Draft, Memory
from embedmind.storage import records
from embedmind.storage.crashpoints import crashpoint
from embedmind.storage.database import Database
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

    def redact(self, id: str, new_content: str, *, now: _dt.datetime | None = None) -> Memory:
        """Replace a memory's content so that no byte of the old one survives.

        Postings, vectors and the fingerprint follow the new content; the WAL
        is checkpointed and truncated afterwards. Safe to run again if it was
        interrupted.

        Raises:
            NotFoundError: When ``id`` does not exist or was forgotten.
            InvalidInputError: When ``new_content`` is invalid.
            StorageError: When the WAL could not be truncated (a reader held it
                for too long); run it again.
        """
        memory_id = validate_id(id)
        at = resolve_now(now)
        prepared = drafts.prepare(Draft(new_content), at)
        embedded: list[Embedded | None] = [None]
        if self._embedder is not None:
            embedded = list(embed_contents(self._embedder, [prepared.content], [None]))
        with self._db.write() as conn:
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
        self._lexical.clear_cache()
        self._save_vectors()
        crashpoint("redact-before-checkpoint")
        self._after_redaction(memory)
        if not self._db.checkpoint():
            raise StorageError("redacted, but a reader kept the WAL busy: run redact again")
        return memory

    def _after_redaction(self, memory: Memory) -> None:
        """Hook for the store: re-derive fragments and notify listeners."""

    def vacuum(self, *, progress: Callable[[str], None] | None = None) -> VacuumReport:
        """Reclaim the space of forgotten memories and rebuild the file in place.

        Superseded memories and every surviving id are kept; the file never
        grows; a crash at any step leaves a valid store (each step is a
        transaction).

        Args:
            progress: Called with a short description as each step starts.

        Returns:
            What was removed and the sizes before and after.
        """
        say = progress or (lambda _: None)
        before = self._db.file_bytes()
        say("dropping tombstones")
        with self._db.write() as conn:
            keys = records.forgotten_keys(conn)
            delete_keys(conn, self._lexical, keys)
        say("rebuilding the database file")
        self._db.checkpoint()
        self._db.vacuum()
        self._lexical.clear_cache()
        say("rebuilding the vector index")
        self._save_vectors(rebuild=True)
        say("truncating the write-ahead log")
        truncated = self._db.checkpoint()
        return VacuumReport(len(keys), before, self._db.file_bytes(), truncated)

    def _save_vectors(self, rebuild: bool = False) -> None:
        if self._vectors is not None:
            with self._db.write() as conn:
                if rebuild:
                    self._vectors.rebuild(conn)
                self._vectors.save(conn, force=rebuild)
        self.fragments.save(rebuild=rebuild)  # vacuum compacts it, redaction rewrites it
