"""Redaction, vacuum and the alias table over backend sessions.

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

from embedmind import aliases as alias_table
from embedmind import drafts
from embedmind.backend.values import CHECKPOINT_TIMEOUT
from embedmind.checks import finite_number
from embedmind.crashpoints import crashpoint
from embedmind.engine.apply import drop_fragments, replace_vectors
from embedmind.engine.commit import Committed
from embedmind.engine.state import Engine
from embedmind.errors import NotFoundError, RedactionIncompleteError, StorageError
from embedmind.ids import validate_id
from embedmind.model import Draft, Memory
from embedmind.timestamps import resolve_now
from embedmind.vectors.embedding import Embedded, embed_contents

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


def redact(
    engine: Engine,
    id: str,
    new_content: str,
    *,
    now: _dt.datetime | None = None,
    checkpoint_timeout: float = CHECKPOINT_TIMEOUT,
) -> Memory:
    """Replace a memory's content so that no byte of the old one survives."""
    memory_id = validate_id(id)
    timeout = _timeout(checkpoint_timeout)
    at = resolve_now(now)
    prepared = drafts.prepare(Draft(new_content), at)
    engine.backend.check_memory(prepared)
    embedded: list[Embedded | None] = [None]
    if engine.embedder is not None:
        embedded = list(embed_contents(engine.embedder, [prepared.content], [None]))
    # The commit path re-derives its fragments and notifies listeners
    # (MemoryRedacted) right after COMMIT, before the forced saves below.
    with engine.commit.write() as tx:
        rows = tx.session.records
        existing = rows.find(memory_id)
        if existing is None or existing.forgotten:
            raise NotFoundError(memory_id)
        rows.set_content(existing.key, prepared.content, prepared.fingerprint, at)
        rows.unindex_text([existing.key])
        rows.index_text([(existing.key, prepared.content)])
        replace_vectors(tx.session, existing.key, embedded[0])
        drop_fragments(tx.session, existing.key)  # their texts hold the old content
        crashpoint("redact")
        memory = rows.load([existing.key])[existing.key]
        tx.record(Committed("redact", redacted=(memory,)))
    engine.backend.clear_caches()
    save_indexes(engine)
    crashpoint("redact-before-checkpoint")
    problem = engine.backend.checkpoint(timeout)
    if problem is not None:
        raise RedactionIncompleteError(memory_id, problem, timeout)
    return memory


def vacuum(
    engine: Engine,
    *,
    progress: Callable[[str], None] | None = None,
    checkpoint_timeout: float = CHECKPOINT_TIMEOUT,
) -> VacuumReport:
    """Reclaim the space of forgotten memories and rebuild the file in place."""
    timeout = _timeout(checkpoint_timeout)
    say = progress or (lambda _: None)
    backend = engine.backend
    before = backend.file_bytes()
    say("dropping tombstones")
    # Tombstones were reported when forgotten: their removal records nothing.
    with engine.commit.write() as tx:
        keys = tx.session.records.forgotten_keys()
        tx.session.records.delete(keys)
    say("rebuilding the database file")
    backend.checkpoint(timeout)
    backend.vacuum()
    backend.clear_caches()
    say("rebuilding the vector index")
    save_indexes(engine, rebuild=True)
    say("truncating the write-ahead log")
    truncated = backend.checkpoint(timeout) is None
    return VacuumReport(len(keys), before, backend.file_bytes(), truncated)


def set_aliases(
    engine: Engine,
    aliases: Mapping[str, str],
    *,
    replace: bool = False,
    show_progress: bool = False,
) -> int:
    """Add or change aliases, then re-index the memories they change."""
    entries = alias_table.validate(aliases)
    alias_table.set_aliases(engine.commit, entries, replace=replace)
    return reindex_aliases(engine, show_progress=show_progress)


def aliases(engine: Engine) -> dict[str, str]:
    """The alias table: ``{key as given: target}``, ordered by analysed key."""
    with engine.backend.read() as session:
        return alias_table.current(session.aliases)


def remove_aliases(engine: Engine, keys: Iterable[str], *, show_progress: bool = False) -> int:
    """Remove aliases by key (matched after analysis), then re-index what they changed."""
    wanted = alias_table.validate_keys(keys)
    removed = alias_table.remove_aliases(engine.commit, wanted)
    reindex_aliases(engine, show_progress=show_progress)
    return removed


def reindex_aliases(engine: Engine, *, show_progress: bool = False) -> int:
    """Finish a re-index an alias change left pending (a crash, a kill); safe to repeat."""
    return alias_table.reindex(engine.commit, engine.backend, show_progress=show_progress)


def save_indexes(engine: Engine, *, rebuild: bool = False) -> None:
    """Save both derived indexes; never raises, since the change they follow has committed.

    A failure (the writer lock busy, the file not registered) is logged: the
    indexes are caches, and the next open replays or rebuilds.
    """
    engine.backend.save_vector_cache(rebuild=rebuild)
    try:  # its own transaction: a failed fragment save never undoes the vector save
        engine.fragments.save(rebuild=rebuild)  # vacuum compacts it, redaction rewrites it
    except StorageError as e:
        logger.warning("could not save the fragment index of %s: %s", engine.backend.path, e)


def _timeout(value: object) -> float:
    """Validate a ``checkpoint_timeout`` (seconds, positive and finite)."""
    return finite_number(
        value, "checkpoint_timeout", positive=True, message="expected a positive number of seconds"
    )
