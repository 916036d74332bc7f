"""One process of the multi-process soak test (``test_processes.py``): a writer or a reader.

Run as ``python soak_worker.py ROLE URL N PROBES``. Once imported and
connected, a process creates ``PROBES.ready.N`` and waits for the file
``PROBES.go``, which holds the deadline (so a slow start on a loaded machine
does not eat the run). Both roles use the
backend API (the engine's ``Store`` does not open PostgreSQL yet) and print
one JSON object on stdout at the end. An embedmind error is counted and the
loop goes on; any other exception ends the process with status 3 and the
traceback on stderr, which the test reports.

* ``writer``: commits batches of one to three memories (row, text index,
  vector; one transaction each) until ``DEADLINE``; every fourth batch also
  holds a *probe*, whose id, unique word and vector seed it appends to the
  file ``PROBES`` after the commit returned.
* ``reader``: before each call, reads the probes appended so far; then, in one
  new read session, recalls by text and vector and checks that every new
  probe is the top text hit for its word and among the top vector hits for
  its vector — a write acknowledged in one process is visible in another at
  its next call.
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from embedmind.backend.postgres.backend import FACTORY
from embedmind.backend.values import OpenOptions
from embedmind.drafts import prepare
from embedmind.errors import EmbedmindError
from embedmind.model import Draft
from embedmind.query.selection import Selection

DIMS = 8
NAMESPACE = "soak"
NOW = 10**15
WORDS = "tea coffee paris trip dog book run green alice bob river song".split()


def vector(seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A unit vector drawn from ``seed`` (a probe's vector is found again from its seed)."""
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return (v / np.linalg.norm(v)).astype("<f4")


def word(me: int, n: int) -> str:
    """A word no other memory holds: letters only, so the analyser keeps it whole."""
    letters = "".join("bcdfghjklmnpqrstvwxz"[int(c)] for c in f"{me}{n:05d}")
    return "qy" + letters


def started(me: int, probes: str) -> float:
    """Say this process is ready, then wait for the start; the deadline."""
    Path(f"{probes}.ready.{me}").touch()
    go = Path(f"{probes}.go")
    while not go.exists() or not go.read_text().endswith("\n"):
        time.sleep(0.02)
    return float(go.read_text())


def writer(url: str, me: int, probes: str) -> dict[str, Any]:
    backend = FACTORY.open(OpenOptions(url))
    deadline = started(me, probes)
    rng = random.Random(me)
    acknowledged: list[str] = []
    errors: Counter[str] = Counter()
    i = batch_no = 0
    while time.time() < deadline:
        size = rng.randint(1, 3)
        drafts = [
            Draft(" ".join(rng.choices(WORDS, k=5)), id=f"w{me}-{i + j}", namespace=NAMESPACE,
                  session_id=f"s{me}-{(i + j) // 10}")
            for j in range(size)
        ]  # fmt: skip
        seeds = [me * 10**7 + i + j for j in range(size)]
        probe = None
        if batch_no % 4 == 0:
            probe = (f"p{me}-{batch_no}", word(me, batch_no), me * 10**7 + 5 * 10**6 + batch_no)
            drafts.append(Draft(f"probe {probe[1]}", id=probe[0], namespace=NAMESPACE))
            seeds.append(probe[2])
        i += size
        batch_no += 1
        try:
            with backend.write() as w:
                prepared = [prepare(d, NOW + rng.randrange(10**9)) for d in drafts]
                keys = w.records.insert_many(prepared)
                w.records.index_text([(k, p.content) for k, p in zip(keys, prepared, strict=True)])
                for key, p, seed in zip(keys, prepared, seeds, strict=True):
                    w.records.put_vectors(key, [(0, len(p.content))], [vector(seed).tobytes()])
        except EmbedmindError as exc:
            errors[type(exc).__name__] += 1
            continue
        acknowledged += [d.id for d in drafts if d.id is not None]
        if probe is not None:
            with open(probes, "a", encoding="utf-8") as f:  # one short line: an atomic append
                f.write(json.dumps(probe) + "\n")
    backend.close()
    return {"acknowledged": acknowledged, "errors": errors}


def reader(url: str, me: int, probes: str) -> dict[str, Any]:
    backend = FACTORY.open(OpenOptions(url))
    deadline = started(me, probes)
    rng = random.Random(1000 + me)
    errors: Counter[str] = Counter()
    offset, checked, calls = 0, 0, 0
    misses: list[str] = []
    pending: list[tuple[str, str, int]] = []
    while time.time() < deadline:
        with open(probes, encoding="utf-8") as f:  # before the call: these are acknowledged
            f.seek(offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind("\n") + 1]
        offset += len(complete.encode("utf-8"))
        pending += [tuple(json.loads(line)) for line in complete.splitlines()]  # type: ignore[misc]
        selection = Selection.of(NOW + 10**10, NAMESPACE)
        try:
            with backend.read() as r:
                r.channels.text_top(" ".join(rng.choices(WORDS, k=3)), selection, 10)
                r.channels.vector_top(vector(rng.randrange(10**9)), selection, 10)
                for memory_id, probe_word, seed in pending:
                    found = r.records.find(memory_id)
                    text = r.channels.text_top(probe_word, selection, 3)
                    near = r.channels.vector_top(vector(seed), selection, 10)
                    if found is None:
                        misses.append(f"{memory_id}: not found by id")
                    elif not text or text[0][0] != found.key:
                        misses.append(f"{memory_id}: not the top text hit for {probe_word}")
                    elif found.key not in [h.key for h in near]:
                        misses.append(f"{memory_id}: not among the top 10 vector hits")
                    checked += 1
            pending = []
            calls += 1
        except EmbedmindError as exc:
            errors[type(exc).__name__] += 1  # the probes are checked again at the next call
    backend.close()
    return {"checked": checked, "calls": calls, "misses": misses[:20], "errors": errors}


def main() -> None:
    role, url, me, probes = sys.argv[1:5]
    run = writer if role == "writer" else reader
    try:
        result = run(url, int(me), probes)
    except BaseException:
        traceback.print_exc()
        sys.exit(3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
