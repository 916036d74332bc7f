"""Redaction, vacuum and alias methods of :class:`embedmind.Store`.

The work is done in :mod:`embedmind.engine.maintenance`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping

from embedmind.backend.values import CHECKPOINT_TIMEOUT
from embedmind.engine import maintenance
from embedmind.engine.maintenance import VacuumReport
from embedmind.facade import Facade
from embedmind.model import Memory

__all__ = ["MaintenanceMethods", "VacuumReport"]


class MaintenanceMethods(Facade):
    """Mixed into :class:`embedmind.Store`."""

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

        On PostgreSQL every row and index of the store is rewritten just the
        same, but the server's WAL, archives, replicas and backups keep the old
        bytes until its operators expire them (the backend declares no secure
        delete; ``docs/explanation/backends.md``).
        """
        return maintenance.redact(
            self._engine, id, new_content, now=now, checkpoint_timeout=checkpoint_timeout
        )

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

        On PostgreSQL every table of the store is rewritten (``VACUUM FULL``),
        each under an exclusive lock its readers and writers wait on, so that
        no data file keeps a byte of a redacted or deleted value
        (``docs/how-to/postgres.md``).

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
            StoreBusyError: On PostgreSQL, when a transaction held a table
                past ``busy_timeout``.
        """
        return maintenance.vacuum(
            self._engine, progress=progress, checkpoint_timeout=checkpoint_timeout
        )

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
        return maintenance.set_aliases(
            self._engine, aliases, replace=replace, show_progress=show_progress
        )

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
        return maintenance.aliases(self._engine)

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
        return maintenance.remove_aliases(self._engine, keys, show_progress=show_progress)

    def reindex_aliases(self, *, show_progress: bool = False) -> int:
        """Finish a re-index an alias change left pending (a crash, a kill); safe to repeat.

        Args:
            show_progress: Show a progress bar on stderr.

        Returns:
            How many memories were re-indexed (0 when nothing was pending).
        """
        return maintenance.reindex_aliases(self._engine, show_progress=show_progress)
