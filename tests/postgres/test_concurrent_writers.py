"""Several processes writing one store at once: nothing lost or doubled, the text index exact.

Four processes each write 60 dialog turns through :class:`PostgresBackend` in
small transactions, two of the dialogs shared by every process (so the
per-dialog lock and the sharded statistics are both contended). Afterwards
every acknowledged id is stored once, and the postings, the document rows and
the statistics equal a rebuild from the stored rows.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import psycopg
import pytest

from embedmind.backend.postgres import lexical, schema
from embedmind.backend.postgres.backend import FACTORY
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.values import OpenOptions

# Serial pass of `make test` (not beside other tests): writer processes started at one instant.
pytestmark = pytest.mark.serial

WRITERS = 4
TURNS = 45

_WRITER = textwrap.dedent(
    """
    import sys, time, random
    from embedmind.backend.postgres.backend import FACTORY
    from embedmind.backend.values import OpenOptions
    from embedmind.drafts import prepare
    from embedmind.model import Draft
    url, me, turns, start_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    words = "tea coffee paris trip dog book run green alice bob".split()
    rng = random.Random(me)
    backend = FACTORY.open(OpenOptions(url))
    time.sleep(max(0.0, start_at - time.time()))
    done = []
    for i in range(0, turns, 3):
        drafts = [
            Draft(" ".join(rng.choices(words, k=4)), id=f"w{me}-{i + j}", namespace="shared",
                  session_id=("common-a", "common-b", f"own-{me}")[(i + j) % 3])
            for j in range(3)
        ]
        with backend.write() as w:
            keys = w.records.insert_many([prepare(d, 10**15 + rng.randrange(10**6)) for d in drafts])
            w.records.index_text([(k, d.content) for k, d in zip(keys, drafts)])
        done += [d.id for d in drafts]
    backend.close()
    print(" ".join(done))
    """
)


def test_four_writer_processes(pg_server: ThrowawayServer, pg_dsn: str) -> None:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    url = pg_server.url(str(dbname)) + "?schema=conc"
    FACTORY.open(OpenOptions(url)).close()  # migrated once, before the race
    start_at = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, str(me), str(TURNS), str(start_at)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for me in range(WRITERS)
    ]  # fmt: skip
    acknowledged: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        acknowledged += out.split()
    assert len(acknowledged) == WRITERS * TURNS
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        schema.use_schema(conn, "conc")
        stored = [r[0] for r in conn.execute("SELECT id FROM memories")]
        assert sorted(stored) == sorted(acknowledged)
        snapshot = (
            set(conn.execute("SELECT term, key, tf, length FROM lex_postings").fetchall()),
            set(conn.execute("SELECT key, length, prev_key, next_key FROM lex_docs").fetchall()),
            lexical.statistics(conn),
        )
        with conn.transaction():
            lexical.rebuild(conn, session_context=True)
        rebuilt = (
            set(conn.execute("SELECT term, key, tf, length FROM lex_postings").fetchall()),
            set(conn.execute("SELECT key, length, prev_key, next_key FROM lex_docs").fetchall()),
            lexical.statistics(conn),
        )
        assert snapshot == rebuilt
