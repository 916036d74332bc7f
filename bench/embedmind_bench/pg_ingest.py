"""``remember_many`` on PostgreSQL beside pgvector's HNSW floor, in one run on one server.

Run it as ``python -m embedmind_bench.pg_ingest`` (``--size 3000 --batch 1000
--rounds 2`` by default). One throwaway server (:mod:`.pg_server`'s
settings); each round loads the same seeded chat documents and embedding-like
384-dimension vectors, each variant into a fresh database, in turn:

- ``embedmind``: ``Store.open(url).remember_many`` in batches (vectors given,
  session context on, a metadata field per memory, as the peers benchmark);
- ``floor``: a bare ``COPY`` of the same vectors, batch by batch, one
  transaction each, into a table with the same HNSW index embedmind creates
  (``(embedding::vector(d)) vector_cosine_ops`` with the ``m`` and
  ``ef_construction`` of :mod:`embedmind.backend.postgres.schema`, read from
  this checkout): the pgvector insertion work no store on it can avoid;
- ``build``: the same ``COPY`` into a table without the index, then
  ``CREATE INDEX`` (what a one-off bulk import can do instead);
- ``baseline`` (with ``--baseline TREE``): ``embedmind`` again, imported from
  another checkout (an older commit), for an A/B of a change.

Variants alternate within each round (A/B/A/B), each in its own process, so
the machine's load falls on all of them alike; the table prints documents/s
per variant and round, the load average before each, and each variant's
time over the floor's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIMS = 384
VARIANTS = ("embedmind", "floor", "build")


def _child(variant: str, url: str, dsn: str, data: Path, batch: int, tree: str | None) -> float:
    """Load ``data`` one way; return the seconds it took (runs in its own process)."""
    if tree:  # the baseline: embedmind from another checkout, not this editable install
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
        sys.path.insert(0, tree)
    import numpy as np
    import psycopg

    vectors = np.load(data / "vectors.npy")
    texts = json.loads((data / "texts.json").read_text())
    n = len(texts)
    if variant in ("floor", "build"):
        # The settings embedmind's own indexes get (this checkout's, not the baseline's).
        from embedmind.backend.postgres.schema import HNSW_EF_CONSTRUCTION, HNSW_M

        index = (
            f"CREATE INDEX ON t USING hnsw ((embedding::vector({DIMS})) vector_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        )
        literals = ["[" + ",".join(map(repr, v.tolist())) + "]" for v in vectors]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(
                "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                "key bigint NOT NULL, embedding vector NOT NULL)"
            )
            if variant == "floor":
                conn.execute(index)
            started = time.perf_counter()
            for start in range(0, n, batch):
                with (
                    conn.transaction(),
                    conn.cursor().copy("COPY t (key, embedding) FROM STDIN") as cp,
                ):
                    for i in range(start, min(start + batch, n)):
                        cp.write_row((i, literals[i]))
            if variant == "build":
                conn.execute(index)
            return time.perf_counter() - started
    import embedmind
    from embedmind.embedders.hashing import HashingEmbedder
    from embedmind.model import Draft
    from embedmind.store import Store

    if tree and not str(embedmind.__file__).startswith(tree):
        raise RuntimeError(f"baseline imported {embedmind.__file__}, not from {tree}")
    store = Store.open(url, embedder=HashingEmbedder(dims=DIMS), session_context=True)
    drafts = [
        Draft(text, id=f"d{i}", vector=vectors[i], metadata={"b100": i % 100})
        for i, text in enumerate(texts)
    ]
    try:
        started = time.perf_counter()
        for start in range(0, n, batch):
            store.remember_many(drafts[start : start + batch], batch_size=batch)
        return time.perf_counter() - started
    finally:
        store.close()


def run(size: int, batch: int, rounds: int, baseline: str | None) -> list[dict[str, object]]:
    """Every variant ``rounds`` times, alternating, on one throwaway server; one row per load."""
    import numpy as np

    from embedmind.backend.postgres.testing import ThrowawayServer
    from embedmind_bench.corpus import CorpusSpec, iter_documents
    from embedmind_bench.pg_server import SETTINGS
    from embedmind_bench.vectordata import mixed_vectors

    rng = np.random.default_rng(20240601)
    base = rng.standard_normal((256, DIMS)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    variants = (*VARIANTS, "baseline") if baseline else VARIANTS
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="embedmind-pg-ingest-") as tmp:
        data = Path(tmp)
        np.save(data / "vectors.npy", mixed_vectors(base, size, seed=20240601))
        (data / "texts.json").write_text(json.dumps(list(iter_documents(size, CorpusSpec()))))
        with ThrowawayServer.start(settings=SETTINGS) as server:
            for r in range(rounds):
                for variant in variants:
                    name = f"{variant}_{r}"
                    dsn = server.create_database(name)
                    load = os.getloadavg()[0]
                    tree = (baseline or "") if variant == "baseline" else ""
                    child = "embedmind" if variant == "baseline" else variant
                    argv = [sys.executable, __file__, "--child", child, server.url(name), dsn,
                            str(data), str(batch), tree]  # fmt: skip
                    # Our own interpreter running this file: no untrusted input.
                    done = subprocess.run(argv, capture_output=True, text=True, check=False)  # noqa: S603
                    server.drop_database(name)
                    if done.returncode:
                        raise RuntimeError(f"{variant} failed: {done.stderr[-2000:]}")
                    seconds = float(done.stdout.strip().splitlines()[-1])
                    rows.append({"round": r, "variant": variant, "seconds": seconds,
                                 "docs_per_s": size / seconds, "load": load})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run, print one line per load and the ratios to the floor."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        variant, url, dsn, data, batch, tree = args[1:7]
        print(_child(variant, url, dsn, Path(data), int(batch), tree or None))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=3_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", help="another checkout's root: its embedmind, A/B")
    options = parser.parse_args(args)
    rows = run(options.size, options.batch, options.rounds, options.baseline)
    print(f"remember_many of {options.size:,} in batches of {options.batch:,}, {DIMS} dims")
    for row in rows:
        print(f"  round {row['round']}  {row['variant']:9s} {row['seconds']:7.1f} s "
              f"{row['docs_per_s']:7.0f} docs/s   load {row['load']:.1f}")  # fmt: skip
    for r in range(options.rounds):
        floor = next(x["seconds"] for x in rows if x["round"] == r and x["variant"] == "floor")
        ratios = ", ".join(
            f"{x['variant']} {float(x['seconds']) / float(floor):.2f}"  # type: ignore[arg-type]
            for x in rows if x["round"] == r
        )  # fmt: skip
        print(f"  round {r} time / floor: {ratios}")


if __name__ == "__main__":
    main()
