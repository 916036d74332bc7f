"""The PostgreSQL schema: numbered migrations applied under an advisory lock.

A store lives in one PostgreSQL schema (``embedmind`` unless the caller names
another), so several stores — or an application's own tables — can share a
database. Its tables mirror the SQLite data model (``docs/how-to/postgres.md``
lists them): memories with their namespace, tier, session, times, ``jsonb``
metadata and ``text[]`` tags; memory and fragment vectors as pgvector
``vector``; graph edges and entities; supersession (``superseded_by``); the
lexical postings with sharded statistics.

Migrations are numbered like the SQLite ones and recorded in
``schema_migrations``. The pending ones run in one transaction that first takes a
transaction-scoped advisory lock, one key per database for every embedmind
schema (``CREATE EXTENSION`` is database-wide), and re-reads the version, so
two servers opening a new database at once apply each migration exactly once:
the second waits, then finds it done (a failed migration leaves the schema as
it was). A schema newer than this build is refused with
:class:`~embedmind.errors.SchemaVersionError`.

The vector column has no fixed dimension in the table: the store's model is
recorded later (:func:`record_dimensions`), which adds a ``CHECK`` on the
dimension and the HNSW indexes over ``embedding::vector(d)`` — pgvector's way to
index a column without a type modifier.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from embedmind.errors import InvalidInputError, SchemaVersionError

DEFAULT_SCHEMA = "embedmind"
LOCK_KEY = 0x656D_6264_6D6E_6401
"""The advisory-lock key every embedmind migration in a database takes ("embdmnd" + 1)."""
LEX_SHARDS = 64
"""Rows of the lexical statistics: a writer adds to the row of its backend, so
writers on different connections do not queue on one counter row."""
TIERS = ("working", "episodic", "semantic", "procedural")
LEVELS = ("explicit", "deduced")
MAX_HNSW_DIMENSIONS = 2_000
"""pgvector's HNSW limit for ``vector`` (``halfvec`` would reach 4,000)."""
HNSW_M = 32
"""Neighbours per node of the HNSW graphs (pgvector's default is 16; 64 on the bottom layer).

Measured on the peers corpus at 100k (``embedmind bench peers --backend postgres``:
384-dimension MiniLM embeddings and embedding-like mixtures of them, which crowd
into tight clusters; index built by ``CREATE INDEX``, recall@10 against exact
cosine at the channel's ``ef_search`` of 632 / pgvector's ceiling of 1,000):
``m = 16`` 0.969 / 0.979 with ``ef_construction = 64``, 0.978 / 0.988 with 128,
0.984 / 0.991 with 256; ``m = 32`` 0.995 / 0.997 with 64. The graph is fixed as
vectors are linked in, so no search depth makes up for too few links per node,
and a wider candidate list while linking (``ef_construction``) helps less than
more links, for more build time (256: 462 s for 100k, ``m = 32``: 303 s). The price
is the insert (1.5-1.8 times the load time), an unfiltered query at 100k (1.65 times
the p50); the database at 10k grew 1 % (68.5 against 67.8 MB): ``docs/benchmarks.md``."""
HNSW_EF_CONSTRUCTION = 64
"""The candidate list while a vector is linked into the graph (pgvector's default)."""
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

Conn = psycopg.Connection[TupleRow]
Migration = Callable[[Conn], None]


def _tuple(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def m0001_initial(conn: Conn) -> None:
    """Records, tags, graph, vectors, fragments, postings and bookkeeping."""
    conn.execute(
        f"""
        CREATE TABLE meta (key text PRIMARY KEY, value jsonb NOT NULL);
        CREATE SEQUENCE write_seq;

        CREATE TABLE memories (
            key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id text COLLATE "C" NOT NULL UNIQUE,
            namespace text COLLATE "C" NOT NULL,
            content text NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{{}}',
            tags text[] NOT NULL DEFAULT '{{}}',
            tier text NOT NULL CHECK (tier IN {_tuple(TIERS)}),
            level text NOT NULL CHECK (level IN {_tuple(LEVELS)}),
            agent text NOT NULL DEFAULT '',
            session_id text COLLATE "C",
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            valid_from bigint NOT NULL,
            valid_to bigint,
            expires_at bigint,
            superseded_by text COLLATE "C",
            confidence double precision NOT NULL DEFAULT 1.0,
            access_count bigint NOT NULL DEFAULT 0,
            last_accessed_at bigint,
            fingerprint text NOT NULL,
            forgotten_at bigint,
            contradicted_by text,
            prior_confidence double precision
        );
        CREATE INDEX memories_by_namespace ON memories (namespace, created_at, key);
        CREATE INDEX memories_by_time ON memories (created_at, key);
        CREATE INDEX memories_by_fingerprint ON memories (namespace, tier, fingerprint);
        CREATE INDEX memories_by_agent ON memories (agent, session_id);
        CREATE INDEX memories_by_session ON memories (namespace, session_id, created_at, key)
            WHERE session_id IS NOT NULL;
        CREATE INDEX memories_by_superseder ON memories (superseded_by)
            WHERE superseded_by IS NOT NULL;
        CREATE INDEX memories_by_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX memories_by_tags ON memories USING gin (tags);
        CREATE INDEX memories_by_metadata ON memories USING gin (metadata jsonb_path_ops);

        CREATE TABLE entities (
            entity_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text COLLATE "C" NOT NULL UNIQUE
        );
        CREATE TABLE memory_entities (
            entity_id bigint NOT NULL REFERENCES entities ON DELETE CASCADE,
            key bigint NOT NULL REFERENCES memories ON DELETE CASCADE,
            PRIMARY KEY (entity_id, key)
        );
        CREATE INDEX memory_entities_by_key ON memory_entities (key, entity_id);
        CREATE TABLE relations (
            src bigint NOT NULL REFERENCES memories ON DELETE CASCADE,
            kind text COLLATE "C" NOT NULL,
            dst bigint NOT NULL REFERENCES memories ON DELETE CASCADE,
            created_at bigint NOT NULL,
            PRIMARY KEY (src, kind, dst)
        );
        CREATE INDEX relations_by_dst ON relations (dst, kind, src);
        CREATE TABLE namespace_links (
            src text COLLATE "C" NOT NULL,
            dst text COLLATE "C" NOT NULL,
            tiers text[],
            note text NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (src, dst)
        );

        CREATE TABLE memory_vectors (
            vec_key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            key bigint NOT NULL REFERENCES memories ON DELETE CASCADE,
            start integer NOT NULL,
            "end" integer NOT NULL,
            embedding vector NOT NULL
        );
        CREATE INDEX memory_vectors_by_memory ON memory_vectors (key);
        CREATE TABLE fragments (
            vec_key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            key bigint NOT NULL REFERENCES memories ON DELETE CASCADE,
            start bigint NOT NULL,
            "end" bigint NOT NULL,
            embedding vector NOT NULL,
            text text
        );
        CREATE INDEX fragments_by_memory ON fragments (key);
        CREATE TABLE fragment_sources (
            key bigint PRIMARY KEY REFERENCES memories ON DELETE CASCADE,
            fingerprint text NOT NULL
        );

        CREATE TABLE lex_docs (
            key bigint PRIMARY KEY REFERENCES memories ON DELETE CASCADE,
            length integer NOT NULL,
            has_links boolean NOT NULL,
            prev_key bigint,
            next_key bigint
        );
        CREATE TABLE lex_postings (
            term text COLLATE "C" NOT NULL,
            key bigint NOT NULL REFERENCES lex_docs ON DELETE CASCADE,
            tf integer NOT NULL,
            length integer NOT NULL,
            PRIMARY KEY (term, key)
        );
        CREATE INDEX lex_postings_by_key ON lex_postings (key);
        CREATE TABLE lex_stats (
            shard integer PRIMARY KEY,
            doc_count bigint NOT NULL,
            total_length bigint NOT NULL
        );
        INSERT INTO lex_stats SELECT s, 0, 0 FROM generate_series(0, {LEX_SHARDS - 1}) s;
        """
    )


def m0002_filter_functions(conn: Conn) -> None:
    """The function a ``where`` raises its type errors through (``where_sql``)."""
    conn.execute(
        """
        CREATE FUNCTION em_filter_type_error(key text, op text) RETURNS boolean
        LANGUAGE plpgsql VOLATILE AS $fn$
        BEGIN
            RAISE EXCEPTION 'embedmind filter type error: % on %', op, key
                USING DETAIL = json_build_object('key', key, 'op', op)::text,
                      ERRCODE = 'data_exception';
        END
        $fn$
        """
    )


def m0003_metadata_text(conn: Conn) -> None:
    """The caller's metadata JSON text beside its ``jsonb`` (key order and number types kept)."""
    conn.execute("ALTER TABLE memories ADD COLUMN metadata_text text")


def m0004_aliases(conn: Conn) -> None:
    """The alias table and the memories waiting to be re-indexed after it changed.

    As SQLite's migration 6: keys and targets kept as given (the analysed form
    follows the running analyser), ``alias_pending`` the memories whose
    postings still follow an earlier table (:mod:`.aliases`). An older store
    gains an empty table, so its postings are unchanged.
    """
    conn.execute(
        """
        CREATE TABLE aliases (key text COLLATE "C" PRIMARY KEY, target text NOT NULL);
        CREATE TABLE alias_pending (key bigint PRIMARY KEY REFERENCES memories ON DELETE CASCADE);
        """
    )


def m0005_vectorless(conn: Conn) -> None:
    """The memories without a memory vector, kept by statement triggers.

    A vector recall asks whether any memory in scope lacks a vector (to say
    so in a note); an anti-join of every live memory against its vectors grew
    with the store (~5-9 ms at 3,000 memories). This table holds the keys
    that had no vector at the end of a statement, so the question reads it
    instead. Keys are never reused, so a row left by a deleted memory only
    costs a join miss (no foreign key: a cascaded delete of the vectors runs
    after its memory is gone).
    """
    conn.execute(
        """
        CREATE TABLE vectorless (key bigint PRIMARY KEY);
        CREATE FUNCTION em_vectorless_added() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
            INSERT INTO vectorless SELECT n.key FROM new_rows n
            WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.key = n.key)
            ON CONFLICT DO NOTHING;
            RETURN NULL;
        END
        $fn$;
        CREATE FUNCTION em_vectorless_embedded() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
            DELETE FROM vectorless x USING new_rows n WHERE x.key = n.key;
            RETURN NULL;
        END
        $fn$;
        CREATE FUNCTION em_vectorless_unembedded() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
            INSERT INTO vectorless SELECT DISTINCT o.key FROM old_rows o
            WHERE EXISTS (SELECT 1 FROM memories m WHERE m.key = o.key)
              AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.key = o.key)
            ON CONFLICT DO NOTHING;
            RETURN NULL;
        END
        $fn$;
        CREATE TRIGGER vectorless_added AFTER INSERT ON memories
            REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION em_vectorless_added();
        CREATE TRIGGER vectorless_embedded AFTER INSERT ON memory_vectors
            REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION em_vectorless_embedded();
        CREATE TRIGGER vectorless_unembedded AFTER DELETE ON memory_vectors
            REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION em_vectorless_unembedded();
        INSERT INTO vectorless SELECT m.key FROM memories m
        WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.key = m.key);
        """
    )


def m0006_hnsw_links(conn: Conn) -> None:
    """The HNSW indexes' settings become :data:`HNSW_M` (was 16) and :data:`HNSW_EF_CONSTRUCTION`.

    ``ALTER INDEX ... SET`` records the settings; it does not relink the graph.
    pgvector reads ``m`` from the index's meta page, written when the index was
    built, so the vectors inserted after this migration are still linked with the
    old ``m`` (the graph stays consistent) until the index is rebuilt; a rebuild
    (``REINDEX INDEX CONCURRENTLY``, which does not block writes, or a plain
    ``REINDEX``) builds it with the recorded settings. The migration does not
    rebuild: a ``REINDEX`` of a large table runs for minutes per 100,000 vectors,
    blocks every write to it meanwhile, and would hold the migration lock every
    other server opening the store waits for; ``REINDEX ... CONCURRENTLY`` cannot
    run inside the migration's transaction at all. The operator rebuilds when
    convenient (``docs/how-to/postgres.md``, "Upgrading the HNSW indexes"). A store
    whose dimension is not recorded yet has no HNSW index: :func:`record_dimensions`
    creates it with these settings. Changing the settings takes a brief exclusive
    lock on each index (a catalogue update), so it waits for the recalls in flight.
    """
    for table in ("memory_vectors", "fragments"):
        index = f"{table}_hnsw"
        row = conn.execute(
            "SELECT to_regclass(quote_ident(current_schema()) || '.' || quote_ident(%s))",
            (index,),
        ).fetchone()
        if row is not None and row[0] is not None:
            conn.execute(
                sql.SQL("ALTER INDEX {} SET (m = {}, ef_construction = {})").format(
                    sql.Identifier(index),
                    sql.Literal(HNSW_M),
                    sql.Literal(HNSW_EF_CONSTRUCTION),
                )
            )


def m0007_confidence_range(conn: Conn) -> None:
    """``confidence`` and ``prior_confidence`` must lie in [0, 1]: NaN and infinities are refused.

    The engine writes only values in [0, 1]; the checks refuse the others an
    ``UPDATE`` by hand could store (``'NaN'::float8`` compares above every
    number, so ``<= 1`` refuses it). ``NOT VALID``: rows already stored are not
    checked, so a store holding such a value still opens (a read names it,
    :class:`~embedmind.errors.DamagedRecordError`, and ``store.delete`` or a
    rewrite with ``remember`` repairs it); every row written from now on is checked.
    """
    conn.execute(
        """
        ALTER TABLE memories ADD CONSTRAINT memories_confidence_range
            CHECK (confidence >= 0 AND confidence <= 1) NOT VALID;
        ALTER TABLE memories ADD CONSTRAINT memories_prior_confidence_range
            CHECK (prior_confidence >= 0 AND prior_confidence <= 1) NOT VALID;
        """
    )


MIGRATIONS: tuple[Migration, ...] = (
    m0001_initial, m0002_filter_functions, m0003_metadata_text, m0004_aliases,
    m0005_vectorless, m0006_hnsw_links, m0007_confidence_range,
)  # fmt: skip
LATEST = len(MIGRATIONS)


def check_schema_name(name: str) -> str:
    """Validate a schema name: a lower-case SQL identifier, and none of PostgreSQL's own.

    ``pg_*`` (``pg_catalog``, ``pg_toast``, ``pg_temp_N``...) and
    ``information_schema`` are the server's: it refuses to create the first,
    and ``pg_dump`` skips both, so a store there would be missing from every
    backup. Refused here, before any connection.

    Raises:
        InvalidInputError: When it is not an identifier, or names a system schema.
    """
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise InvalidInputError(
            "schema", f"{name!r} is not a lower-case identifier like 'embedmind' or 'app_memory'"
        )
    if name.startswith("pg_") or name == "information_schema":
        raise InvalidInputError(
            "schema",
            f"{name!r} is a PostgreSQL system schema, which pg_dump leaves out of backups: "
            "name one of your own, like 'embedmind' or 'app_memory'",
        )
    return name


def use_schema(conn: Conn, schema: str) -> None:
    """Set the search path to ``schema`` then pgvector's schema (where its types live)."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    ).fetchone()
    path = [check_schema_name(schema)] + ([row[0]] if row and row[0] != schema else [])
    conn.execute(
        sql.SQL("SET search_path TO {}").format(sql.SQL(", ").join(map(sql.Identifier, path)))
    )


def schema_version(conn: Conn, schema: str) -> int:
    """The newest applied migration of ``schema`` (0 when it has none)."""
    found = conn.execute(
        "SELECT to_regclass(quote_ident(%s) || '.schema_migrations') IS NOT NULL", (schema,)
    ).fetchone()
    if not found or not found[0]:
        return 0
    row = conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_migrations").format(
            sql.Identifier(schema)
        )
    ).fetchone()
    return int(row[0]) if row else 0


def migrate(conn: Conn, schema: str = DEFAULT_SCHEMA) -> int:
    """Apply every pending migration of ``schema`` in one transaction under the lock.

    Args:
        conn: A connection in autocommit mode (the migrations open their
            own transaction); its search path is left pointing at ``schema``.
        schema: The store's PostgreSQL schema.

    Returns:
        The schema version after migrating.

    Raises:
        SchemaVersionError: When the schema was written by a newer embedmind.
    """
    check_schema_name(schema)
    where = f"{conn.info.dbname}/{schema}"
    version = schema_version(conn, schema)
    if version > LATEST:
        raise SchemaVersionError(where, version, LATEST)
    if version < LATEST:
        # Every pending migration in one transaction: one lock, one commit, and
        # a schema either fully migrated or untouched (a fresh one is opened by
        # every test, so the round trips count).
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            # The lock holder before us may have applied them: read again under the lock.
            current = schema_version(conn, schema)
            if current > LATEST:
                raise SchemaVersionError(where, current, LATEST)
            if current < LATEST:
                _prepare(conn, schema, fresh=current == 0)
            for number in range(current + 1, LATEST + 1):
                migration = MIGRATIONS[number - 1]
                migration(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (number, migration.__name__),
                )
            if current == 0:
                _new_store_settings(conn)
    use_schema(conn, schema)
    return max(version, LATEST)


def _new_store_settings(conn: Conn) -> None:
    """The settings a new store starts with, in the transaction that creates it.

    Date words are on (:mod:`embedmind.lexical.dates`; the key is the lexical
    module's ``DATES_KEY``): a store of an earlier release has no such row,
    and keeps its postings without them (off) until ``Store.open`` is asked.
    """
    conn.execute("""INSERT INTO meta VALUES ('date_words', '"true"'::jsonb)""")


def _prepare(conn: Conn, schema: str, *, fresh: bool) -> None:
    """The extension, the schema and its ``schema_migrations`` table, each only when missing."""
    row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        # In the database's default creation schema (public), not the
        # store's: every store of the database shares the one extension.
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    if fresh:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    use_schema(conn, schema)
    if fresh:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )


def record_dimensions(conn: Conn, dimensions: int) -> None:
    """Fix the store's vector dimension and build the HNSW indexes for it (once).

    Called inside a transaction, under the migration lock. A second call with
    the same dimension does nothing; another dimension is refused (the engine
    reports the model mismatch before it gets here).

    Raises:
        InvalidInputError: When ``dimensions`` is out of pgvector's HNSW range
            or differs from the recorded one.
    """
    if not 1 <= dimensions <= MAX_HNSW_DIMENSIONS:
        raise InvalidInputError(
            "dimensions", f"{dimensions} is outside 1..{MAX_HNSW_DIMENSIONS} (pgvector HNSW)"
        )
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
    row = conn.execute("SELECT value FROM meta WHERE key = 'dimensions'").fetchone()
    if row is not None:
        if int(row[0]) != dimensions:
            raise InvalidInputError(
                "dimensions", f"the store holds {row[0]}-dimensional vectors, not {dimensions}"
            )
        return
    conn.execute("INSERT INTO meta VALUES ('dimensions', %s::jsonb)", (str(dimensions),))
    for table in ("memory_vectors", "fragments"):
        name = sql.Identifier(table)
        conn.execute(
            sql.SQL(
                "ALTER TABLE {t} ADD CONSTRAINT {c} CHECK (vector_dims(embedding) = {d})"
            ).format(t=name, c=sql.Identifier(f"{table}_dimensions"), d=sql.Literal(dimensions))
        )
        conn.execute(
            sql.SQL(
                "CREATE INDEX {i} ON {t} USING hnsw ((embedding::vector({d})) vector_cosine_ops) "
                "WITH (m = {m}, ef_construction = {ef})"
            ).format(
                i=sql.Identifier(f"{table}_hnsw"),
                t=name,
                d=sql.Literal(dimensions),
                m=sql.Literal(HNSW_M),
                ef=sql.Literal(HNSW_EF_CONSTRUCTION),
            )
        )


def dimensions(conn: Conn) -> int | None:
    """The store's recorded vector dimension, or ``None`` before any model was recorded."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'dimensions'").fetchone()
    return None if row is None else int(row[0])
