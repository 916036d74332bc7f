"""Worker processes for the multi-process tests.

``mp_workers.py writer STORE N SYNC DURATION ACKFILE [IDS]``
    Writer ``N`` opens the store at the instant the test gives every process
    and waits for the run's start instant (both through the ``SYNC`` files:
    :func:`tooling.children.start_together`), then for
    ``DURATION`` seconds writes batches of 3 memories in one ``remember_many``
    transaction each. After each call returns it appends the batch's ids as one
    line to ``ACKFILE`` (flushed), and ``origin start_ns end_ns`` (the call's
    ``CLOCK_MONOTONIC`` interval, comparable across processes) to
    ``ACKFILE.times``. ``IDS`` is ``unique`` (default: ids of its own) or
    ``colliding``: every other batch then rewrites one of :data:`GROUPS` id
    groups that all writers share (an upsert of the same 3 ids), tagged with the
    group and carrying its ``origin`` (writer and sequence). At the end it
    prints a JSON summary.

``mp_workers.py reader STORE SYNC DURATION ACKFILE...``
    Opens and starts with the writers (``SYNC`` as theirs), then loops until
    the end of the run checking that it only ever sees whole batches and that every batch acknowledged before a read started is visible
    to it. Raises (exit 1) on the first violation; prints a JSON summary.

``mp_workers.py holder STORE RELEASEFILE``
    Enters the store's write transaction (internal ``store._db.write()``),
    prints ``HOLDING`` and keeps the writer lock until ``RELEASEFILE`` exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

import embedmind

BATCH = 3
BUCKETS = 32
GROUPS = 8
"""Shared id groups of colliding writers: few, so writers hit the same ids often."""
MAX_SECONDS = 30.0
"""How long the holder keeps the lock at most, should the test never release it."""
MAX_RUN_SECONDS = 3600.0
"""A cap on writer and reader runs (the soak sets long ones through the test's env)."""
MAX_SYNC_SECONDS = 300.0
"""How long a child waits for the test to name an instant, should the test be gone."""


def batch_tag(writer: int, seq: int) -> str:
    """The tag every memory of one batch carries."""
    return f"w{writer}_{seq}"


def _wait_until(start: float) -> None:
    delay = start - time.time()
    if delay > 0:
        time.sleep(delay)


def _meet(sync: str, stage: str) -> float:
    """Say this process reached ``stage``; return the instant the test then names for all.

    The test names it once every process has said so (``tooling.children.start_together``):
    a start instant fixed before the children were spawned passed before a loaded
    machine had even imported them all (12 s for four at load 9), and the writers then
    ran for no time at all.
    """
    Path(f"{sync}.{stage}.{os.getpid()}").touch()
    answer = Path(f"{sync}.{stage}")
    deadline = time.monotonic() + MAX_SYNC_SECONDS
    while not answer.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"the test never named the {stage} instant")
        time.sleep(0.005)
    instant = float(answer.read_text())
    _wait_until(instant)
    return instant


def _open_together(path: str, sync: str) -> tuple[embedmind.Store, float]:
    """Open the store at the same instant as the other processes; return it and the start."""
    _meet(sync, "open")  # all of them create and migrate a new file at once
    store = embedmind.Store.open(path, embedder=None)
    return store, _meet(sync, "start")


def _check_memory(m: embedmind.Memory) -> None:
    meta = m.metadata
    assert hashlib.sha256(m.content.encode()).hexdigest() == meta["csha"], m.id
    assert m.id == f"{meta['batch']}-{meta['i']}", m.id
    assert meta["origin"] == batch_tag(meta["writer"], meta["seq"]), m.id


def writer(path: str, n: int, sync: str, duration: float, ack_path: str, ids: str) -> None:
    """Write 3-memory batches as fast as the lock allows."""
    store, start = _open_together(path, sync)
    end = min(start + duration, time.time() + MAX_RUN_SECONDS)
    commits = 0
    with (
        open(ack_path, "a", encoding="utf-8") as ack,
        open(ack_path + ".times", "a", encoding="utf-8") as times,
    ):
        while time.time() < end:
            origin = batch_tag(n, commits)
            # Colliding: every other batch upserts a group of ids all writers share.
            shared = ids == "colliding" and commits % 2 == 1
            tag = f"g{(commits // 2 + n) % GROUPS}" if shared else origin
            items = []
            for i in range(BATCH):
                content = (
                    f"writer {n} batch {commits} item {i} ledger "
                    f"bucket{commits % BUCKETS} tag_{tag}"
                )
                meta = {
                    "batch": tag,
                    "origin": origin,
                    "writer": n,
                    "seq": commits,
                    "i": i,
                    "size": BATCH,
                    "csha": hashlib.sha256(content.encode()).hexdigest(),
                }
                items.append({"id": f"{tag}-{i}", "content": content, "metadata": meta})
            began = time.monotonic_ns()
            stored = store.remember_many(items, batch_size=BATCH)
            ended = time.monotonic_ns()
            assert [m.id for m in stored] == [d["id"] for d in items]
            ack.write(",".join(d["id"] for d in items) + "\n")
            ack.flush()
            times.write(f"{origin} {began} {ended}\n")
            times.flush()
            commits += 1
    store.close()
    print(json.dumps({"writer": n, "commits": commits, "pid": os.getpid()}))


def _acked(ack_paths: list[str]) -> list[list[str]]:
    batches = []
    for p in ack_paths:
        try:
            with open(p, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        batches += [line.split(",") for line in text.split("\n")[:-1]]  # whole lines only
    return batches


def _whole(memories: list[embedmind.Memory], what: str) -> dict[str, int]:
    groups: dict[str, int] = {}
    origins: dict[str, set[str]] = {}
    for m in memories:
        _check_memory(m)
        groups[m.metadata["batch"]] = groups.get(m.metadata["batch"], 0) + 1
        origins.setdefault(m.metadata["batch"], set()).add(m.metadata["origin"])
    partial = {tag: count for tag, count in groups.items() if count != BATCH}
    assert not partial, f"{what} saw partial batches: {partial}"
    # A shared id group is rewritten whole by one transaction: one origin at a time.
    mixed = {tag: sorted(o) for tag, o in origins.items() if len(o) != 1}
    assert not mixed, f"{what} saw a group mixing transactions: {mixed}"
    return groups


def reader(path: str, sync: str, duration: float, ack_paths: list[str]) -> None:
    """Check snapshots are whole and acknowledged writes are visible."""
    rng = random.Random(7)
    store, start = _open_together(path, sync)
    end = min(start + duration, time.time() + MAX_RUN_SECONDS)
    counts = {"iterations": 0, "acked_checked": 0, "recalls": 0, "scans": 0, "max_seen": 0}
    while time.time() < end:
        counts["iterations"] += 1
        acked = _acked(ack_paths)  # read before the queries start
        if acked:
            # Acknowledged before this read began, so it must be visible.
            chosen = acked[-4:] + rng.sample(acked, min(30, len(acked)))
            wanted = list(dict.fromkeys(i for batch in chosen for i in batch))
            found = store.get_many(wanted)
            missing = set(wanted) - {m.id for m in found}
            assert not missing, f"acknowledged but invisible: {sorted(missing)[:6]}"
            _whole(found, "get_many")
            counts["acked_checked"] += len(wanted)
            latest = acked[-1][rng.randrange(BATCH)]
            assert store.get(latest) is not None, f"acknowledged {latest} invisible to get"
            tag = rng.choice(acked)[0].rsplit("-", 1)[0]
            hits = store.recall(f"tag_{tag}", mode="text", k=10).hits
            assert sorted(h.memory.id for h in hits) == [f"{tag}-{i}" for i in range(BATCH)]
            counts["recalls"] += 1
        # One read transaction over a slice of every writer's batches.
        bucket = f"bucket{rng.randrange(BUCKETS)}"
        hits = store.recall(bucket, mode="text", k=10_000).hits
        _whole([h.memory for h in hits], f"recall({bucket!r})")
        counts["recalls"] += 1
        if counts["iterations"] % 8 == 1:
            acked = _acked(ack_paths)
            everything = list(store.iter())
            groups = _whole(everything, "iter")
            tags = {batch[0].rsplit("-", 1)[0] for batch in acked}
            assert tags <= set(groups), f"iter missed acknowledged {sorted(tags - set(groups))[:5]}"
            counts["scans"] += 1
            counts["max_seen"] = max(counts["max_seen"], len(everything))
    store.close()
    print(json.dumps(counts))


def holder(path: str, release_path: str) -> None:
    """Hold the writer lock (inside an open write transaction) until released."""
    store = embedmind.Store.open(path, embedder=None)
    deadline = time.monotonic() + MAX_SECONDS
    with store._db.write():
        print("HOLDING", flush=True)
        while not os.path.exists(release_path) and time.monotonic() < deadline:
            time.sleep(0.01)
    print("RELEASED", flush=True)
    store.close()


def main(argv: list[str]) -> int:
    """Dispatch on the first argument."""
    mode, args = (argv[0], argv[1:]) if argv else ("", [])
    if mode == "writer" and len(args) in (5, 6):
        ids = args[5] if len(args) == 6 else "unique"
        writer(args[0], int(args[1]), args[2], float(args[3]), args[4], ids)
    elif mode == "reader" and len(args) >= 4:
        reader(args[0], args[1], float(args[2]), args[3:])
    elif mode == "holder" and len(args) == 2:
        holder(args[0], args[1])
    else:
        sys.stderr.write(__doc__ or "")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
