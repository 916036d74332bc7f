"""Four writer processes and two readers on one database, each through ``Store.open(url)``.

Each process is ``soak_worker.py``: it opens ``embedmind.Store.open(
"postgresql://...")`` as an application server would and uses the public API
only. Afterwards:

* no acknowledged write is lost and none is stored twice, and nothing that was
  not acknowledged is stored (no write failed here, so none may be ambiguous);
* no process met an exception that is not an embedmind error (a raw one ends
  the process with status 3);
* every probe a writer acknowledged was found by ``get`` (its id), as the top
  text hit for its unique word and as the top vector hit for its own vector, by
  a reader at its next round after the acknowledgement (the rounds after the
  deadline check those left, so each reader checks every probe);
* the text index (postings, documents, statistics) equals a rebuild.

The load runs the issue's 30 s by default (the whole test about 40 s on a quiet
machine); ``EMBEDMIND_PG_SOAK_SECONDS`` lengthens (or shortens) it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
import soak_worker  # the workers' own module (this directory is on sys.path under pytest)

from embedmind.backend.postgres import lexical, schema
from embedmind.backend.postgres.testing import ThrowawayServer

# Serial pass of `make test` (not beside other tests): six processes and the server share the CPU for the whole run.
pytestmark = pytest.mark.serial

SECONDS = float(os.environ.get("EMBEDMIND_PG_SOAK_SECONDS", "30"))
WRITERS, READERS = 4, 2
WORKER = Path(__file__).with_name("soak_worker.py")


def test_four_writers_and_two_readers(
    pg_server: ThrowawayServer, pg_dsn: str, tmp_path: Path
) -> None:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    url = pg_server.url(str(dbname)) + "?schema=soak"
    soak_worker.open_store(url).close()  # migrated and its model recorded once, before the race
    probes = tmp_path / "probes.jsonl"
    probes.touch()
    roles = ["writer"] * WRITERS + ["reader"] * READERS
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), role, url, str(n), str(probes)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n, role in enumerate(roles)
    ]  # fmt: skip
    waited = time.monotonic()
    while len(list(tmp_path.glob("probes.jsonl.ready.*"))) < len(roles):
        assert all(p.poll() is None for p in procs), "a process ended before it was ready"
        assert time.monotonic() - waited < 120, "the processes did not get ready"
        time.sleep(0.05)
    (tmp_path / "probes.jsonl.go.tmp").write_text(f"{time.time() + SECONDS!r}\n")
    (tmp_path / "probes.jsonl.go.tmp").rename(tmp_path / "probes.jsonl.go")
    results = []
    for n, (role, proc) in enumerate(zip(roles, procs, strict=True)):
        if n == WRITERS:  # every writer returned: no probe is still to come
            (tmp_path / "probes.jsonl.final").touch()
        out, err = proc.communicate(timeout=SECONDS + 120)
        assert proc.returncode == 0, f"a {role} failed (3: a raw exception):\n{err[-3000:]}"
        results.append(json.loads(out))
    writers, readers = results[:WRITERS], results[WRITERS:]
    acknowledged = [i for r in writers for i in r["acknowledged"]]
    errors = sum((Counter(r["errors"]) for r in results), Counter())
    assert not errors, f"embedmind errors under plain load: {dict(errors)}"

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        schema.use_schema(conn, "soak")
        stored = [r[0] for r in conn.execute("SELECT id FROM memories")]
        assert len(stored) == len(set(stored))
        assert sorted(stored) == sorted(acknowledged), "lost, doubled or unacknowledged writes"
        [vectors] = conn.execute("SELECT count(*) FROM memory_vectors").fetchone() or [0]
        assert vectors == len(stored)
        snapshot = (
            set(conn.execute("SELECT term, key, tf, length FROM lex_postings").fetchall()),
            set(conn.execute("SELECT key, length, prev_key, next_key FROM lex_docs").fetchall()),
            lexical.statistics(conn),
        )
        with conn.transaction():
            lexical.rebuild(conn, session_context=True)
        assert snapshot == (
            set(conn.execute("SELECT term, key, tf, length FROM lex_postings").fetchall()),
            set(conn.execute("SELECT key, length, prev_key, next_key FROM lex_docs").fetchall()),
            lexical.statistics(conn),
        )

    probe_count = sum(1 for i in acknowledged if i.startswith("p"))
    misses = [m for r in readers for m in r["misses"]]
    assert not misses, misses
    assert all(r["checked"] == probe_count for r in readers), (probe_count, readers)
    assert probe_count >= WRITERS * 2 and all(r["calls"] > 5 for r in readers)
    print(
        f"soak {SECONDS:g}s: {len(acknowledged)} writes ({len(acknowledged) / SECONDS:.0f}/s), "
        f"{probe_count} probes, reader calls {[r['calls'] for r in readers]}"
    )
