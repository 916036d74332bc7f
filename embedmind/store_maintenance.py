"""Redaction and vacuum methods of :class:`embedmind.Store`.

``redact`` replaces a memory's content in place — for credential removal or
repair — and re-derives its postings and vectors in the same transaction;
``secure_delete`` zeroes the freed space, terms used only by the old text
leave the dictionary, and a truncating WAL checkpoint removes the old pages
from the WAL, so no byte of the old content survives in any file of the
store. ``vacuum`` drops tombstones, rebuilds the file in place (never by
swapping files, which corrupts a store other processes have open) and
rebuilds the vector index. ``set_aliases``, ``aliases``, ``remove_aliases``
and ``reindex_aliases`` manage the store's alias table (:mod:`embedmind.aliases`).
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedmind import aliases as alias_table
from embedmind import drafts
from embedmind.backend.sqlite import records
from embedmind.backend.sqlite.crashpoints import crashpoint
from embedmind.backend.sqlite.database import CHECKPOINT_TIMEOUT, Database
from embedmind.backend.sqlite.hnsw import VectorIndex
from embedmind.backend.sqlite.lexical.index import LexicalIndex
from embedmind.checks import finite_number
from embedmind.embedders.protocol import Embedder
from embedmind.engine.commit import CommitPath, Committed
from embedmind.errors import (
    NotFoundError,
    RedactionIncompleteError,
    StorageError,
)
from embedmind.ids import validate_id
from embedmind.model import Draft, Memory
from embedmind.timestamps import resolve_now
from embedmind.vectors.embedding import Embedded, embed_contents
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

    def set_aliases(
        self, aliases: Mapping[str, str], *, replace: bool = False, show_progress: bool = False
    ) -> int:
        """Add or change aliases, then re-index the memories they change.

        A memory whose text holds a key ("NYC") is also found by its target's
        words ("new york"), and a query holding a key also finds memories that
        say the target, at a reduced weight (``docs/how-to/aliases.md``).
        Keys are matched after analysis, so "NYC", "nyc" and "N Y C" are
        told apart only by the analyzer (the first two are one key).

        The change commits first, with the list of memories it affects; the
        re-index follows in batches, each its own transaction. If the process
        dies in between, the next alias call (or :meth:`reindex_aliases`)
        finishes it; meanwhile those memories keep the expansions they were
        indexed with, and are still found by their own words.

        Args:
            aliases: ``{key: target}``; a key or target of up to 4 or 8 words,
                200 characters each. A key already in the table takes the new
                target.
            replace: Make the table exactly ``aliases`` (``{}`` empties it).
            show_progress: Show a progress bar of the re-index on stderr.

        Returns:
            How many memories were re-indexed.

        Raises:
            InvalidInputError: When ``aliases`` is not a mapping of strings, a
                key or target has no index terms (only stop words) or too many,
                a target analyses to its own key, two keys analyse alike, or
                the table would exceed 10,000 aliases; nothing is written.
        """
        entries = alias_table.validate(aliases)
        alias_table.set_aliases(self._commit, self._lexical, entries, replace=replace)
        return self.reindex_aliases(show_progress=show_progress)

    def aliases(self) -> dict[str, str]:
        """The alias table: ``{key as given: target}``, ordered by analysed key.

        Example:
            >>> import embedmind
            >>> store = embedmind.Store.open(":memory:", embedder=None)
            >>> store.set_aliases({"NYC": "new york"})
            0
            >>> store.aliases()
            {'NYC': 'new york'}
        """
        with self._db.read() as conn:
            return alias_table.current(conn)

    def remove_aliases(self, keys: Iterable[str], *, show_progress: bool = False) -> int:
        """Remove aliases by key (matched after analysis), then re-index what they changed.

        Keys that are not in the table are ignored.

        Args:
            keys: The keys to remove, e.g. ``["nyc"]``.
            show_progress: Show a progress bar of the re-index on stderr.

        Returns:
            How many aliases were removed.

        Raises:
            InvalidInputError: When ``keys`` is a single string rather than a
                list, or a key is not a string with index terms; nothing is
                written.
        """
        wanted = alias_table.validate_keys(keys)
        removed = alias_table.remove_aliases(self._commit, self._lexical, wanted)
        self.reindex_aliases(show_progress=show_progress)
        return removed

    def reindex_aliases(self, *, show_progress: bool = False) -> int:
        """Finish a re-index an alias change left pending (a crash, a kill); safe to repeat.

        Args:
            show_progress: Show a progress bar on stderr.

        Returns:
            How many memories were re-indexed (0 when nothing was pending).
        """
        return alias_table.reindex(
            self._commit, self._lexical, self._db, show_progress=show_progress
        )

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
