"""Child programs of the one-writer, many-readers test (RELIABILITY.md R8).

Run by path with ``PYTHONPATH`` set to the repository root, like ``mp_workers.py``.

``reader_workers.py writer STORE START DURATION ACKFILE``
    Waits until the wall-clock instant ``START``, then for ``DURATION``
    seconds commits one transaction per call: mostly a new batch of
    :data:`BATCH` memories (``remember_many``), and every
    :data:`UPDATE_EVERY`-th call a rewrite of an earlier batch's members with a
    new version (an upsert transaction that replaces content, postings and
    vectors). After each call returns it appends ``kind,seq,version`` to
    ``ACKFILE`` (flushed): the write is acknowledged. It times every call and
    samples the WAL file after each one, and prints a JSON summary.

``reader_workers.py reader STORE START DURATION ACKFILE N``
    Reader ``N`` loops until the end checking, on every call, that it sees only
    whole transactions (all members of a batch, all at one version) through
    ``get_many``, text recall, vector recall and ``iter``, and that every write
    acknowledged before the call began is visible, the vector path included.
    Violations and errors are counted, not raised, so the summary says how many;
    the first few are quoted.

Every memory of batch ``seq`` carries the tag ``tag_b{seq}`` and a shared
vector direction (:func:`base_vector`); its members are small perturbations
of it, so a vector query with the base finds exactly the batch, far above
any other memory (random 64-dim directions stay below cosine ~0.6).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

T = TypeVar("T")
DIMS = 64
BATCH = 3
BUCKETS = 64
UPDATE_EVERY = 5
MATCH = 0.9
"""Cosine above which a hit belongs to the queried batch (members sit near 0.99)."""
MAX_SECONDS = 3600.0
MAX_QUOTED = 5


def base_vector(seq: int, version: int = 0) -> np.ndarray:
    """The direction shared by every member of batch ``seq`` at ``version``."""
    rng = np.random.default_rng([seq, version, 1])
    vector = rng.normal(size=DIMS)
    return vector / np.linalg.norm(vector)


def member_vector(seq: int, version: int, i: int) -> list[float]:
    """Member ``i``'s vector: the base plus a small perturbation."""
    rng = np.random.default_rng([seq, version, 2, i])
    vector = base_vector(seq, version) + 0.05 * rng.normal(size=DIMS) / np.sqrt(DIMS)
    return (vector / np.linalg.norm(vector)).tolist()


def member_id(seq: int, i: int) -> str:
    """The id of member ``i`` of batch ``seq``."""
    return f"b{seq}-{i}"


def drafts(seq: int, version: int) -> list[embedmind.Draft]:
    """Batch ``seq`` at ``version``: members sharing a tag, a version and a size."""
    return [
        embedmind.Draft(
            f"batch {seq} version {version} item {i} ledger bucket{seq % BUCKETS} tag_b{seq}",
            id=member_id(seq, i),
            metadata={"seq": seq, "version": version, "i": i, "size": BATCH},
            vector=member_vector(seq, version, i),
        )
        for i in range(BATCH)
    ]


def _open(path: str) -> embedmind.Store:
    return embedmind.Store.open(path, embedder=HashingEmbedder(DIMS))


def _wait_until(start: float) -> None:
    delay = start - time.time()
    if delay > 0:
        time.sleep(delay)


def _wal_bytes(path: str) -> int:
    try:
        return os.stat(path + "-wal").st_size
    except FileNotFoundError:
        return 0


def _index_file_id(path: str) -> tuple[int, int]:
    """Identity of the index file: it changes when a write saved the index."""
    try:
        info = os.stat(path + "-vectors")
    except FileNotFoundError:
        return (0, 0)
    return (info.st_ino, info.st_mtime_ns)


def writer(path: str, start: float, duration: float, ack_path: str) -> None:
    """Commit batches (and rewrites of earlier batches) as fast as they go."""
    store = _open(path)
    rng = random.Random(11)
    _wait_until(start)
    end = min(start + duration, time.time() + MAX_SECONDS)
    versions: dict[int, int] = {}
    commits = batches = updates = index_saves = 0
    latencies: list[float] = []
    save_latencies: list[float] = []
    wal_max = wal_last = wal_resets = 0
    with open(ack_path, "a", encoding="utf-8") as ack:
        while time.time() < end:
            if versions and commits % UPDATE_EVERY == UPDATE_EVERY - 1:
                kind, seq = "update", rng.choice(list(versions))
                version = versions[seq] + 1
            else:
                kind, seq, version = "batch", len(versions), 0
            before = _index_file_id(path)
            began = time.monotonic()
            stored = store.remember_many(drafts(seq, version), batch_size=BATCH)
            took = time.monotonic() - began
            assert [m.id for m in stored] == [member_id(seq, i) for i in range(BATCH)]
            ack.write(f"{kind},{seq},{version}\n")
            ack.flush()
            versions[seq] = version
            commits += 1
            batches += kind == "batch"
            updates += kind == "update"
            # A write that also saved the vector index file (every 20,000
            # vector changes) is an index save, not a checkpoint: timed apart.
            if _index_file_id(path) != before:
                index_saves += 1
                save_latencies.append(took)
            else:
                latencies.append(took)
            wal = _wal_bytes(path)
            wal_resets += wal < wal_last  # the engine checkpointed and truncated it
            wal_max, wal_last = max(wal_max, wal), wal
    store.close()
    ordered = sorted(latencies) or [0.0]
    summary = {
        "commits": commits,
        "batches": batches,
        "updates": updates,
        "commit_max_ms": round(1000 * ordered[-1], 1),
        "commit_p99_ms": round(1000 * ordered[int(0.99 * (len(ordered) - 1))], 1),
        "commit_median_ms": round(1000 * ordered[len(ordered) // 2], 2),
        "index_saves": index_saves,
        "index_save_max_ms": round(1000 * max(save_latencies, default=0.0), 1),
        "wal_max_bytes": wal_max,
        "wal_resets": wal_resets,
        "pid": os.getpid(),
    }
    print(json.dumps(summary))


class Acks:
    """What the writer has acknowledged so far (read incrementally from its file)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._offset = 0
        self._tail = ""
        self.versions: dict[int, int] = {}
        self.last_batch = -1

    def refresh(self) -> None:
        """Read lines appended since the last refresh (whole lines only)."""
        try:
            with open(self._path, encoding="utf-8") as f:
                f.seek(self._offset)
                text = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()  # a line not yet finished by the writer
        for line in lines:
            kind, seq, version = line.split(",")
            self.versions[int(seq)] = int(version)
            if kind == "batch":
                self.last_batch = max(self.last_batch, int(seq))


class Violations(Exception):
    """A read that broke the contract."""


def _whole(
    memories: list[embedmind.Memory], what: str, same_version: bool = True
) -> dict[int, int]:
    """Group by batch: every batch present in full, at one version. Returns seq -> version."""
    groups: dict[int, list[embedmind.Memory]] = {}
    for m in memories:
        groups.setdefault(int(m.metadata["seq"]), []).append(m)
    seen: dict[int, int] = {}
    for seq, members in groups.items():
        if sorted(m.id for m in members) != [member_id(seq, i) for i in range(BATCH)]:
            raise Violations(f"{what}: partial batch {seq}: {sorted(m.id for m in members)}")
        versions = {int(m.metadata["version"]) for m in members}
        if same_version and len(versions) != 1:
            raise Violations(f"{what}: batch {seq} mixes versions {sorted(versions)}")
        for m in members:
            v = int(m.metadata["version"])
            if f"version {v} " not in m.content or m.metadata["size"] != BATCH:
                raise Violations(f"{what}: {m.id} content and metadata disagree")
        seen[seq] = max(versions)
    return seen


def _at_least(seen: dict[int, int], acked: dict[int, int], seqs: list[int], what: str) -> None:
    """Each acknowledged batch is visible, at its acknowledged version or newer."""
    for seq in seqs:
        if seq not in seen:
            raise Violations(f"{what}: acknowledged batch {seq} invisible")
        if seen[seq] < acked[seq]:
            raise Violations(f"{what}: batch {seq} at version {seen[seq]} < acked {acked[seq]}")


class Reader:
    """One reader process's checks and tallies."""

    def __init__(self, path: str, ack_path: str, n: int) -> None:
        self.store = _open(path)
        self.acks = Acks(ack_path)
        self.rng = random.Random(100 + n)
        self.counts = {
            "iterations": 0, "reads": 0, "acked_checked": 0, "vector_checked": 0,
            "in_flight_probes": 0, "in_flight_seen": 0, "scans": 0, "errors": 0,
        }  # fmt: skip
        self.quoted: list[str] = []
        self.worst_call = 0.0
        """The slowest single call (one read transaction)."""
        self.worst_scan = 0.0
        """The slowest whole ``iter()`` (many page transactions)."""

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one read call, timing it."""
        began = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            self.worst_call = max(self.worst_call, time.monotonic() - began)
            self.counts["reads"] += 1

    def _vector(self, seq: int, version: int) -> list[embedmind.Memory]:
        hits = self._call(
            self.store.recall, f"b{seq}", mode="vector", vector=base_vector(seq, version), k=6
        ).hits
        return [h.memory for h in hits if h.channels["vector"].raw >= MATCH]

    def _vector_visible(self, seq: int, version: int) -> None:
        """Batch ``seq``, acknowledged at ``version``, is found whole by vector recall.

        Rewrites may commit while the reader looks (acknowledged or not yet), and
        the same batch can be rewritten more than once during one round. Each
        miss at ``v`` means the batch was at a newer version during that read,
        so the next read asks for ``v + 1``. The batch's version during a read is
        at most one past what the acknowledgements say afterwards (the writer
        acknowledges each call before the next), so a miss at a version that
        high breaks the contract.
        """
        v = version
        while True:
            if seq in _whole(self._vector(seq, v), "vector recall"):
                return
            self.acks.refresh()
            if v >= self.acks.versions[seq] + 1:
                raise Violations(
                    f"vector recall: acknowledged batch {seq} v{version} invisible "
                    f"(looked up to v{v}, acknowledged v{self.acks.versions[seq]})"
                )
            v += 1

    def once(self) -> None:
        """One round of checks; raises :class:`Violations` on a broken contract."""
        self.acks.refresh()  # before the calls: everything read here is acknowledged
        acked = dict(self.acks.versions)
        last = self.acks.last_batch
        if acked:
            seqs = sorted({last, *self.rng.sample(sorted(acked), min(20, len(acked)))})
            wanted = [member_id(s, i) for s in seqs for i in range(BATCH)]
            seen = _whole(self._call(self.store.get_many, wanted), "get_many")
            _at_least(seen, acked, seqs, "get_many")
            self.counts["acked_checked"] += len(seqs)

            hits = self._call(self.store.recall, f"tag_b{last}", mode="text", k=10).hits
            _at_least(_whole([h.memory for h in hits], "text recall"), acked, [last], "text")

            # The vector path: the newest batch and a random one.
            for seq in sorted({last, self.rng.choice(sorted(acked))}):
                self._vector_visible(seq, acked[seq])
                self.counts["vector_checked"] += 1

        # A batch probably being written right now: all of it or none of it.
        probe = last + 1
        found = self._vector(probe, 0)
        _whole(found, "vector recall (in flight)")
        self.counts["in_flight_probes"] += 1
        self.counts["in_flight_seen"] += bool(found)

        bucket = f"bucket{self.rng.randrange(BUCKETS)}"
        hits = self._call(self.store.recall, bucket, mode="text", k=10_000).hits
        if len(hits) >= 10_000:
            raise Violations("a bucket outgrew k: raise BUCKETS")
        _whole([h.memory for h in hits], f"text recall {bucket!r}")

        if self.counts["iterations"] % 16 == 0:
            # iter reads page by page in separate transactions (documented), so a
            # rewrite may land between two pages: whole membership, any versions.
            began = time.monotonic()
            everything = list(self.store.iter())
            self.counts["reads"] += 1
            seen = _whole(everything, "iter", same_version=False)
            _at_least(seen, acked, sorted(acked), "iter")
            self.worst_scan = max(self.worst_scan, time.monotonic() - began)
            self.counts["scans"] += 1

    def run(self, start: float, duration: float) -> None:
        """Loop the checks until the end of the run."""
        _wait_until(start)
        end = min(start + duration, time.time() + MAX_SECONDS)
        while time.time() < end:
            self.counts["iterations"] += 1
            try:
                self.once()
            except (Violations, embedmind.EmbedmindError) as e:
                self.counts["errors"] += 1
                if len(self.quoted) < MAX_QUOTED:
                    self.quoted.append(f"{type(e).__name__}: {e}")
            except Exception:  # anything else is an error too, quoted with its trace
                self.counts["errors"] += 1
                if len(self.quoted) < MAX_QUOTED:
                    self.quoted.append(traceback.format_exc(limit=4))
        self.store.close()
        summary = {
            **self.counts,
            "worst_call_ms": round(1000 * self.worst_call, 1),
            "worst_scan_ms": round(1000 * self.worst_scan, 1),
        }
        print(json.dumps({**summary, "quoted": self.quoted}))


def main(argv: list[str]) -> int:
    """Dispatch on the first argument."""
    mode, args = (argv[0], argv[1:]) if argv else ("", [])
    if mode == "writer" and len(args) == 4:
        writer(args[0], float(args[1]), float(args[2]), args[3])
    elif mode == "reader" and len(args) == 5:
        Reader(args[0], args[3], int(args[4])).run(float(args[1]), float(args[2]))
    else:
        sys.stderr.write(__doc__ or "")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
