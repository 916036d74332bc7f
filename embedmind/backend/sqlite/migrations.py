"""Numbered, named, transactional schema migrations.

The schema version lives in ``PRAGMA user_version``. Opening a store applies
every migration newer than the file's version, each in its own write
transaction; a file newer than :data:`LATEST` is refused with
:class:`SchemaVersionError` rather than misread. A new file also gets the
settings a new store starts with (session context on), in the transaction
of its first migration.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw

from embedmind.backend.sqlite import metadata_index, session_rows, transcode
from embedmind.crashpoints import crashpoint
from embedmind.errors import SchemaVersionError

Migration = Callable[[apsw.Connection], None]


def m0001_initial(conn: apsw.Connection) -> None:
    """Create the records, tags, lexical index and bookkeeping tables."""
    conn.execute(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
        CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
        INSERT INTO counters VALUES ('write_seq', 0);

        CREATE TABLE memories (
            key INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT NOT NULL,
            tags TEXT NOT NULL,
            tier TEXT NOT NULL,
            level TEXT NOT NULL,
            agent TEXT NOT NULL,
            session_id TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            expires_at INTEGER,
            superseded_by TEXT,
            confidence REAL NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at INTEGER,
            fingerprint TEXT NOT NULL,
            forgotten_at INTEGER
        ) STRICT;
        CREATE INDEX memories_by_namespace ON memories (namespace, created_at, key);
        CREATE INDEX memories_by_time ON memories (created_at, key);
        CREATE INDEX memories_by_fingerprint ON memories (namespace, tier, fingerprint);
        CREATE INDEX memories_by_agent ON memories (agent, session_id);

        CREATE TABLE memory_tags (
            tag TEXT NOT NULL,
            key INTEGER NOT NULL,
            PRIMARY KEY (tag, key)
        ) WITHOUT ROWID, STRICT;
        CREATE INDEX memory_tags_by_key ON memory_tags (key);

        CREATE TABLE lex_terms (
            term_id INTEGER PRIMARY KEY AUTOINCREMENT,
            term TEXT NOT NULL UNIQUE,
            df INTEGER NOT NULL,
            version INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE lex_blocks (
            block_id INTEGER PRIMARY KEY AUTOINCREMENT,
            term_id INTEGER NOT NULL,
            first_key INTEGER NOT NULL,
            count INTEGER NOT NULL,
            max_tf INTEGER NOT NULL,
            min_length INTEGER NOT NULL,
            version INTEGER NOT NULL,
            data BLOB NOT NULL
        ) STRICT;
        CREATE UNIQUE INDEX lex_blocks_by_term ON lex_blocks (term_id, first_key);
        CREATE TABLE lex_docs (
            key INTEGER PRIMARY KEY,
            length INTEGER NOT NULL,
            terms BLOB NOT NULL
        ) STRICT;
        CREATE TABLE lex_stats (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            doc_count INTEGER NOT NULL,
            total_length INTEGER NOT NULL
        ) STRICT;
        INSERT INTO lex_stats VALUES (1, 0, 0);
        """
    )


def m0002_vectors(conn: apsw.Connection) -> None:
    """Create the durable vectors, their change log and the index-file registry."""
    conn.execute(
        """
        CREATE TABLE vectors (
            vec_key INTEGER PRIMARY KEY AUTOINCREMENT,
            key INTEGER NOT NULL,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL,
            data BLOB NOT NULL
        ) STRICT;
        CREATE INDEX vectors_by_memory ON vectors (key);
        CREATE TABLE vector_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            vec_key INTEGER NOT NULL,
            added INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE index_files (
            name TEXT PRIMARY KEY,
            seq INTEGER NOT NULL,
            checksum TEXT NOT NULL,
            size INTEGER NOT NULL
        ) STRICT;
        """
    )


def m0003_graph(conn: apsw.Connection) -> None:
    """Entities, typed relations, namespace links and the contradiction audit columns."""
    conn.execute(
        """
        CREATE TABLE entities (
            entity_id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE
        ) STRICT;
        CREATE TABLE memory_entities (
            entity_id INTEGER NOT NULL,
            key INTEGER NOT NULL,
            PRIMARY KEY (entity_id, key)
        ) WITHOUT ROWID, STRICT;
        CREATE INDEX memory_entities_by_key ON memory_entities (key, entity_id);
        CREATE TABLE relations (
            src INTEGER NOT NULL,
            kind TEXT NOT NULL,
            dst INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (src, kind, dst)
        ) WITHOUT ROWID, STRICT;
        CREATE INDEX relations_by_dst ON relations (dst, kind, src);
        CREATE TABLE namespace_links (
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            tiers TEXT,
            note TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (src, dst)
        ) STRICT;
        ALTER TABLE memories ADD COLUMN contradicted_by TEXT;
        ALTER TABLE memories ADD COLUMN prior_confidence REAL;
        CREATE INDEX memories_by_superseder ON memories (superseded_by);
        CREATE INDEX memories_by_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
        """
    )


def m0004_fragments(conn: apsw.Connection) -> None:
    """The fragment index: located vectors per record, their log, their source fingerprints."""
    conn.execute(
        """
        CREATE TABLE fragments (
            vec_key INTEGER PRIMARY KEY AUTOINCREMENT,
            key INTEGER NOT NULL,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL,
            data BLOB NOT NULL,
            text TEXT
        ) STRICT;
        CREATE INDEX fragments_by_memory ON fragments (key);
        CREATE TABLE fragment_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            vec_key INTEGER NOT NULL,
            added INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE fragment_sources (
            key INTEGER PRIMARY KEY,
            fingerprint TEXT NOT NULL
        ) STRICT;
        """
    )


def m0005_sessions(conn: apsw.Connection) -> None:
    """Index memories by dialog, for session context's neighbour lookups.

    Session context finds a memory's previous and next turn in its
    ``(namespace, session_id)`` on every write. Without this index SQLite
    scans the session through ``memories_by_agent`` and sorts it; with it each
    lookup is one covering-index seek (EXPLAIN QUERY PLAN in
    ``tests/test_sessions_index.py``).
    """
    conn.execute(
        "CREATE INDEX memories_by_session ON memories (namespace, session_id, created_at, key)"
    )


def m0006_aliases(conn: apsw.Connection) -> None:
    """The store's alias table and the memories waiting to be re-indexed after it changed.

    An alias maps a key ("NYC") to a target ("new york"); both the postings
    and the query expand it (``embedmind.lexical.aliases``). Both are kept as
    given; ``alias_pending`` lists the memories whose postings still follow
    an earlier table (``embedmind.backend.sqlite.alias_rows``). An older store gains an
    empty table, so its postings are unchanged.
    """
    conn.execute(
        """
        CREATE TABLE aliases (key TEXT PRIMARY KEY, target TEXT NOT NULL) STRICT;
        CREATE TABLE alias_pending (key INTEGER PRIMARY KEY) STRICT;
        """
    )


def m0007_compact_postings(conn: apsw.Connection) -> None:
    """Store the postings compactly: about 3 bytes a posting instead of 14.

    Posting blocks take the smallest byte width each of their key gaps, tfs
    and lengths needs, and each document's term list becomes LEB128 with its
    dialog links in columns of their own (``embedmind.backend.sqlite.blocks``,
    ``embedmind.backend.sqlite.transcode``). Every value is carried over
    exactly, so scores and rankings do not change.
    """
    transcode.compact_postings(conn)


def m0008_metadata_index(conn: apsw.Connection) -> None:
    """Index every memory's top-level metadata entries, kept in step by triggers.

    A ``where`` filter otherwise reads every row's metadata JSON: a vector
    query filtered to 1 % of 100k memories spent 0.5 s on it
    (``embedmind.backend.sqlite.metadata_index``). The rows already stored are
    indexed here, in the migration's transaction.
    """
    conn.execute(metadata_index.SCHEMA)
    conn.execute(metadata_index.BACKFILL)


FINGERPRINT_PREFIX = 8
"""Hex digits of the content fingerprint :func:`m0011_fingerprint_bytes` indexes (32 bits)."""
FINGERPRINT_KEY = f"unhex(substr(fingerprint, 1, {FINGERPRINT_PREFIX}))"
"""The indexed expression: the prefix as 4 bytes.

A lookup must name this very expression for SQLite to use the index, with
:func:`fingerprint_key` of the fingerprint it looks up
(:func:`embedmind.backend.sqlite.records.by_fingerprint`)."""


def fingerprint_key(fingerprint: str) -> bytes:
    """The value :data:`FINGERPRINT_KEY` takes for a row whose fingerprint is ``fingerprint``."""
    return bytes.fromhex(fingerprint[:FINGERPRINT_PREFIX])


def m0009_fingerprint_prefix(conn: apsw.Connection) -> None:
    """Index a 48-bit prefix of each fingerprint (and its namespace) for exact-twin lookups.

    ``remember(dedup="exact")`` and ``find_by_fingerprint`` look a content
    fingerprint up in one namespace. SQLite, which keeps no statistics here,
    answered that through ``memories_by_namespace`` in time order instead of
    the ``(namespace, tier, fingerprint)`` index, so a lookup with no twin read
    the whole namespace (a p50 of 14 ms at 100k memories, 105 ms at 1M; now
    0.07 ms). That index was never used, yet each write inserted into it at a
    random place (a hash): it was 58 % of the WAL pages of a 10,000-memory
    batch at 1M memories. Its replacement is about half the size (31 against
    64 MB at 1M), and the lookup names it (``INDEXED BY``); the full
    fingerprint is still compared, row by row.
    """
    conn.execute(
        """
        DROP INDEX memories_by_fingerprint;
        CREATE INDEX memories_by_fingerprint ON memories (substr(fingerprint, 1, 12), namespace);
        """
    )


def m0010_partial_indexes(conn: apsw.Connection) -> None:
    """Index ``superseded_by`` and sessions only where set, sessions by ``session_id`` first.

    Every read admits only memories with ``superseded_by IS NULL``. SQLite,
    which keeps no statistics here, took that for a selective equality on
    ``memories_by_superseder``: with a filter no other index served (a
    ``session_id`` without a namespace), it read every live memory through
    that index, so a vector recall within one session scored it by reading
    the whole store (10-11 ms at 100k memories). The superseder index now
    holds only superseded memories (its one look-up, ``superseded_by = ?``,
    still seeks it). ``memories_by_session`` leads with ``session_id`` and
    holds only memories in a session: a session filter seeks it with or
    without a namespace, session context's neighbour look-ups seek
    ``(session_id, namespace)`` then a range of ``created_at`` as before, and
    a memory outside any session no longer adds an entry.
    """
    conn.execute(
        """
        DROP INDEX memories_by_superseder;
        CREATE INDEX memories_by_superseder ON memories (superseded_by)
            WHERE superseded_by IS NOT NULL;
        DROP INDEX memories_by_session;
        CREATE INDEX memories_by_session ON memories (session_id, namespace, created_at, key)
            WHERE session_id IS NOT NULL;
        """
    )


def m0011_fingerprint_bytes(conn: apsw.Connection) -> None:
    """Index the fingerprint's first 32 bits as 4 bytes, not 48 bits as 12 hex digits.

    Each insert lands at a random place in this index (its key is a hash), so
    a batch of 10,000 memories rewrites most of its pages: at 1M memories a
    load grew it to 32 MB, and every one of its dirty pages goes to the WAL
    and then back into the file. With the shorter key this migration builds
    it in 21 MB (migration 9's key: 29.1 MB, measured in stop 41). A 10,000-memory
    text-only batch into a 1M store took 1.05-1.07 s against 1.12-1.14 s; a
    whole 1M text-only load, where the index is small at first, gained about
    1.5 % (``docs/benchmarks.md``). The namespace stays in the key, so a lookup
    is still one seek when many namespaces hold the same text. The 32 bits only
    pick the rows to compare: each one's whole fingerprint is compared (a
    prefix shared by chance costs one more row read).
    """
    conn.execute(
        f"""
        DROP INDEX memories_by_fingerprint;
        CREATE INDEX memories_by_fingerprint ON memories ({FINGERPRINT_KEY}, namespace);
        """
    )


def _new_store_settings(conn: apsw.Connection) -> None:
    """The settings a store starts with, written once, in the transaction that creates it.

    Session context is on: it lifts hybrid recall@10 on LoCoMo from 0.666 to
    0.731 (``docs/benchmarks.md``). A store created by an earlier release has
    no such row, and stays as it was (off) until ``Store.open`` is asked.
    Date words (:mod:`embedmind.lexical.dates`) are on too, off likewise for
    an older store: text recall@10 +0.020 on LoCoMo, no fold worse.
    """
    session_rows.set_enabled(conn, True)
    session_rows.set_enabled(conn, True, session_rows.DATES)


MIGRATIONS: tuple[Migration, ...] = (
    m0001_initial, m0002_vectors, m0003_graph, m0004_fragments, m0005_sessions,
    m0006_aliases, m0007_compact_postings, m0008_metadata_index, m0009_fingerprint_prefix,
    m0010_partial_indexes, m0011_fingerprint_bytes,
)  # fmt: skip
LATEST = len(MIGRATIONS)


def schema_version(conn: apsw.Connection) -> int:
    """Return the schema version recorded in the file (0 for a new file)."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


def check_supported(path: str, version: int) -> None:
    """Refuse a file written by a newer embedmind.

    Raises:
        SchemaVersionError: When ``version`` is newer than :data:`LATEST`.
    """
    if version > LATEST:
        raise SchemaVersionError(path, version, LATEST)


def apply_pending(conn: apsw.Connection, path: str) -> int:
    """Apply every migration newer than the file's version; the caller holds the writer lock.

    Returns:
        The schema version after migrating.

    Raises:
        SchemaVersionError: When the file is newer than this build.
    """
    version = schema_version(conn)
    check_supported(path, version)
    for number in range(version + 1, LATEST + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= number:  # another process got here first
                conn.execute("COMMIT")
                continue
            MIGRATIONS[number - 1](conn)
            if number == 1:  # the file was empty: a new store
                _new_store_settings(conn)
            crashpoint("migration")
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return max(version, LATEST)
