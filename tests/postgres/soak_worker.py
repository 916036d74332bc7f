"""One process of the multi-process soak test (``test_processes.py``): a writer or a reader.

Run as ``python soak_worker.py ROLE URL N PROBES``. Each process opens the
store as an application would, ``embedmind.Store.open(URL, embedder=...)``,
and goes through the public API only. Once connected, it creates
``PROBES.ready.N`` and waits for the file ``PROBES.go``, which holds the
deadline (so a slow start on a loaded machine does not eat the run); it prints
one JSON object on stdout at the end. An embedmind error is counted and the
loop goes on; any other exception ends the process with status 3 and the
traceback on stderr, which the test reports.

* ``writer``: ``remember_many`` batches of one to three memories (one
  transaction each) until the deadline; every fourth batch also holds a
  *probe* with a word no other memory has, whose id and word it appends to the
  file ``PROBES`` after the call returned.
* ``reader``: before each round, reads the probes appended so far; then checks
  that every new probe is found by ``get`` (its id), is the top text hit for
  its word and the top vector hit for its own vector — a write acknowledged
  in one process is visible in another at its next call. After the deadline it
  waits for the file ``PROBES.final`` (the test creates it once every writer
  has returned, so no probe is still to come) and checks the rest: every
  acknowledged probe is checked, however far behind a loaded machine left it.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.errors import EmbedmindError

DIMS = 16
NAMESPACE = "soak"
WORDS = "tea coffee paris trip dog book run green alice bob river song".split()
FINAL_WAIT_SECONDS = 300.0
"""How long a reader waits, after the deadline, for every writer to return."""


def open_store(url: str) -> embedmind.Store:
    """The store every process opens: the same URL, the same embedder."""
    return embedmind.Store.open(url, embedder=HashingEmbedder(DIMS))


def probe_vector(memory_id: str) -> list[float]:
    """The probe's own unit vector, seeded by its id, given with it and searched for.

    Embedded text would not do: the hashing embedder folds "probe <word>" into
    16 buckets, so a few hundred probes share a few dozen vectors and a probe
    can tie with ten others at similarity 1.0 and fall out of the top 10.
    """
    seed = int.from_bytes(hashlib.sha256(memory_id.encode("utf-8")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(DIMS)
    return [float(x) for x in vector / np.linalg.norm(vector)]


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


def wait_for(path: Path) -> None:
    """Wait until ``path`` exists (the test creates it); a missing file ends the run."""
    waited = time.monotonic()
    while not path.exists():
        if time.monotonic() - waited > FINAL_WAIT_SECONDS:
            raise TimeoutError(f"{path} did not appear in {FINAL_WAIT_SECONDS:g} s")
        time.sleep(0.02)


def writer(url: str, me: int, probes: str) -> dict[str, Any]:
    store = open_store(url)
    deadline = started(me, probes)
    rng = random.Random(me)
    acknowledged: list[str] = []
    errors: Counter[str] = Counter()
    i = batch_no = 0
    while time.time() < deadline:
        size = rng.randint(1, 3)
        drafts = [
            embedmind.Draft(" ".join(rng.choices(WORDS, k=5)), id=f"w{me}-{i + j}",
                            namespace=NAMESPACE, session_id=f"s{me}-{(i + j) // 10}")
            for j in range(size)
        ]  # fmt: skip
        probe = None
        if batch_no % 4 == 0:
            probe = (f"p{me}-{batch_no}", word(me, batch_no))
            drafts.append(embedmind.Draft(
                f"probe {probe[1]}", id=probe[0], namespace=NAMESPACE,
                vector=probe_vector(probe[0]),
            ))  # fmt: skip
        i += size
        batch_no += 1
        try:
            store.remember_many(drafts)
        except EmbedmindError as exc:
            errors[type(exc).__name__] += 1
            continue
        acknowledged += [d.id for d in drafts if d.id is not None]
        if probe is not None:
            with open(probes, "a", encoding="utf-8") as f:  # one short line: an atomic append
                f.write(json.dumps(probe) + "\n")
    store.close()
    return {"acknowledged": acknowledged, "errors": errors}


def reader(url: str, me: int, probes: str) -> dict[str, Any]:
    store = open_store(url)
    deadline = started(me, probes)
    rng = random.Random(1000 + me)
    errors: Counter[str] = Counter()
    offset, checked, calls = 0, 0, 0
    misses: list[str] = []
    pending: list[tuple[str, str]] = []
    while True:
        closing = time.time() >= deadline
        if closing:
            wait_for(Path(f"{probes}.final"))
        with open(probes, encoding="utf-8") as f:  # before the calls: these are acknowledged
            f.seek(offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind("\n") + 1]
        offset += len(complete.encode("utf-8"))
        pending += [tuple(json.loads(line)) for line in complete.splitlines()]  # type: ignore[misc]
        try:
            store.recall(" ".join(rng.choices(WORDS, k=3)), k=10, namespace=NAMESPACE)
            for memory_id, probe_word in pending:
                found = store.get(memory_id)
                text = store.recall(probe_word, k=3, namespace=NAMESPACE, mode="text")
                near = store.recall(f"probe {probe_word}", k=10, namespace=NAMESPACE,
                                    mode="vector", vector=probe_vector(memory_id))  # fmt: skip
                if found is None:
                    misses.append(f"{memory_id}: not found by id")
                elif not text.hits or text.hits[0].memory.id != memory_id:
                    misses.append(f"{memory_id}: not the top text hit for {probe_word}")
                elif not near.hits or near.hits[0].memory.id != memory_id:
                    misses.append(f"{memory_id}: not the top vector hit for its own vector")
                checked += 1
            pending = []
            calls += 1
        except EmbedmindError as exc:
            errors[type(exc).__name__] += 1  # the probes are checked again at the next round
        if closing:  # the last round: an error in it fails the test anyway
            break
    store.close()
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
