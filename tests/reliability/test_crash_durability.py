"""kill -9 a writer at random moments: every acknowledged write survives, nothing is partial.

A child process (``tests/tooling/crash_writer.py``) loops remember /
remember_many / forget / supersede / redact / vacuum on a store file and prints
``ACK ...`` after each call returns (RELIABILITY.md R1). The parent SIGKILLs it at a seeded random moment, then a fresh
process dumps the store; the parent checks the dump against a model built from
the acknowledgements. The same file is reused by every trial, so a store
killed over and over must keep recovering.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tooling.children import child_env
from tooling.crash_writer import redacted as redacted_content
from tooling.crash_writer import sha

# Serial pass of `make test` (not beside other tests): kill -9 at random instants in children that must get READY in time.
pytestmark = pytest.mark.serial

if TYPE_CHECKING:
    from conftest import Figures

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tests" / "tooling" / "crash_writer.py"
SEED = int(os.environ.get("EMBEDMIND_CRASH_SEED", "20240917"))
TRIALS = int(os.environ.get("EMBEDMIND_CRASH_TRIALS", "25"))


@dataclass
class Op:
    kind: str  # remember | batch | forget | supersede | redact | vacuum
    ids: list[str]
    acked: bool = False
    detail: list[str] = field(default_factory=list)


def _parse(log: str) -> tuple[list[Op], bool]:
    """Ops in order; a final line without its newline was never fully printed."""
    lines = log.split("\n")[:-1]  # complete lines only
    ready = bool(lines) and lines[0] == "READY"
    ops: list[Op] = []
    for line in lines[1:]:
        word, kind, ids, *rest = line.split(" ")
        if word == "BEGIN":
            assert not ops or ops[-1].acked, f"BEGIN before the previous ACK: {line!r}"
            ops.append(Op(kind, ids.split(",")))
        else:
            assert word == "ACK", line
            assert ops, line
            assert not ops[-1].acked, line
            assert ops[-1].ids == ids.split(","), line
            ops[-1].acked = True
            ops[-1].detail = rest[0].split(",") if rest else []
    return ops, ready


def _start_dump(path: Path, workdir: Path, trial: int) -> subprocess.Popen[str]:
    """Start the fresh process that will dump the store once it is given the queries.

    Started while the trial runs, so its import overlaps the trial instead of
    adding to it; it opens the store only when :func:`_dump` writes the queries,
    after the writer was killed.
    """
    qfile, out = workdir / f"queries-{trial}.json", workdir / f"dump-{trial}.json"
    return subprocess.Popen(  # a fresh process: nothing cached from the writer
        [sys.executable, str(TOOL), "dump", str(path), str(qfile), str(out)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _dump(proc: subprocess.Popen[str], workdir: Path, queries: list[str], trial: int) -> dict:
    qfile, out = workdir / f"queries-{trial}.json", workdir / f"dump-{trial}.json"
    written = workdir / f"queries-{trial}.tmp"
    written.write_text(json.dumps(queries))
    written.rename(qfile)  # whole: the dumper starts reading as soon as the name exists
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"trial {trial}: the killed store failed to open:\n{stderr}"
    assert stderr == "", stderr
    return json.loads(out.read_text())


def _trial(
    trial: int, rng: random.Random, child: subprocess.Popen[bytes], log: Path, err: Path, go: Path
) -> list[Op]:
    """Let the writer go, SIGKILL it at a random moment, and parse what it acknowledged."""
    go.touch()
    deadline = time.monotonic() + 20
    while not log.read_text().startswith("READY\n"):
        assert child.poll() is None, f"trial {trial}: child died: {err.read_text()}"
        assert time.monotonic() < deadline, f"trial {trial}: child never got READY"
        time.sleep(0.002)
    time.sleep(rng.uniform(0.02, 0.3))
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, (
        f"trial {trial}: the child ended on its own ({child.returncode}): {err.read_text()}"
    )
    ops, ready = _parse(log.read_text())
    assert ready
    return ops


def _settle(
    op: Op,
    mems: dict[str, dict],
    model: dict[str, tuple[str, bool]],
    successor: dict[str, str],
    redacted: set[str],
    vacuumed: set[str],
) -> bool:
    """Fold the call in flight at the kill into the model, asserting it is all or nothing.

    Returns:
        Whether the store shows the call as committed.
    """
    if op.kind in ("remember", "batch"):
        present = [i for i in op.ids if i in mems]
        assert present in ([], op.ids), (
            f"unacknowledged {op.kind} partially applied: {len(present)} of {len(op.ids)}"
        )
        for i in present:
            model[i] = (mems[i]["sha"], mems[i]["forgotten"])
        return bool(present)
    if op.kind == "supersede":
        new, old = op.ids
        done = new in mems
        assert mems[old]["superseded_by"] == (new if done else None), (
            f"supersede half applied: {new} present={done}, "
            f"{old} superseded by {mems[old]['superseded_by']}"
        )
        if done:
            model[new] = (mems[new]["sha"], mems[new]["forgotten"])
            successor[old] = new
        return done
    if op.kind == "forget":
        memory_id = op.ids[0]
        done = bool(mems[memory_id]["forgotten"])
        model[memory_id] = (model[memory_id][0], done)
        return done
    if op.kind == "redact":
        memory_id = op.ids[0]
        got = mems[memory_id]
        done = got["sha"] != model[memory_id][0]
        if done:
            assert got["sha"] == sha(redacted_content(memory_id), got["metadata"]), got
            model[memory_id] = (got["sha"], False)
            redacted.add(memory_id)
        return done
    assert op.kind == "vacuum", op
    tombstones = [i for i, (_, forgotten) in model.items() if forgotten]
    gone = [i for i in tombstones if i not in mems]
    assert gone in ([], tombstones), f"vacuum dropped {len(gone)} of {len(tombstones)} tombstones"
    for memory_id in gone:
        del model[memory_id]
        vacuumed.add(memory_id)
    return bool(gone)


@pytest.mark.timeout(max(60, TRIALS * 3))
def test_kill_9_loses_no_acknowledged_write(tmp_path: Path, figures: Figures) -> None:
    rng = random.Random(SEED)
    store = tmp_path / "crash.mind"
    # The model: id -> (sha, forgotten), for every memory the store must hold.
    model: dict[str, tuple[str, bool]] = {}
    successor: dict[str, str] = {}  # superseded id -> the id that superseded it
    redacted: set[str] = set()
    vacuumed: set[str] = set()  # forgotten ids a vacuum removed
    acked_kinds: dict[str, int] = {}
    acked_writes = lost = in_flight_seen = leaks = 0
    started = time.monotonic()
    seeds = [rng.randrange(2**32) for _ in range(TRIALS)]
    spawned: list[subprocess.Popen[bytes]] = []
    dumpers: list[subprocess.Popen[str]] = []

    def start_writer(trial: int) -> tuple[subprocess.Popen[bytes], Path, Path, Path]:
        # Started one trial ahead: it imports while the previous trial is checked,
        # and opens the store only once its go-file appears.
        log, err, go = (tmp_path / f"{name}-{trial}" for name in ("out", "err", "go"))
        with log.open("w") as out, err.open("w") as errf:
            child = subprocess.Popen(
                [sys.executable, str(TOOL), "write", str(store), str(seeds[trial]),
                 f"t{trial:02d}", str(go)],
                stdout=out, stderr=errf, env=child_env(),
            )  # fmt: skip
        spawned.append(child)
        return child, log, err, go

    upcoming = start_writer(0)
    try:
        for trial in range(TRIALS):
            dumper = _start_dump(store, tmp_path, trial)
            dumpers.append(dumper)
            ops = _trial(trial, rng, *upcoming)
            if trial + 1 < TRIALS:
                upcoming = start_writer(trial + 1)

            # Apply acknowledged ops to the model; at most the last op is in flight.
            pending: Op | None = None
            for op in ops:
                if not op.acked:
                    pending = op
                    continue
                acked_writes += 1
                acked_kinds[op.kind] = acked_kinds.get(op.kind, 0) + 1
                if op.kind == "forget":
                    assert op.ids[0] in model, op
                    assert not model[op.ids[0]][1], op
                    assert op.detail == ["True"], f"forget of a live memory returned {op.detail}"
                    model[op.ids[0]] = (model[op.ids[0]][0], True)
                elif op.kind == "supersede":
                    new, old = op.ids
                    assert old in model and not model[old][1], op
                    model[new] = (op.detail[0], False)
                    successor[old] = new
                elif op.kind == "redact":
                    model[op.ids[0]] = (op.detail[0], False)
                    redacted.add(op.ids[0])
                elif op.kind == "vacuum":  # tombstones are gone for good
                    for memory_id in [i for i, (_, gone) in model.items() if gone]:
                        del model[memory_id]
                        vacuumed.add(memory_id)
                else:
                    for memory_id, digest in zip(op.ids, op.detail, strict=True):
                        model[memory_id] = (digest, False)

            trial_ids = [i for op in ops if op.acked and op.kind != "vacuum" for i in op.ids]
            sample = [i for i in trial_ids[-40:] if i in model]
            sample += rng.sample(sorted(model), min(40, len(model)))
            if pending is not None and pending.kind != "vacuum":
                sample += pending.ids
            sample = sorted(set(sample))
            dump = _dump(dumper, tmp_path, sample, trial)
            mems: dict[str, dict] = dump["memories"]
            assert dump["integrity"] == ["ok"], dump["integrity"]
            assert dump["duplicates"] == []

            # The op in flight happened entirely or not at all; learn which from the store.
            if pending is not None:
                in_flight_seen += _settle(pending, mems, model, successor, redacted, vacuumed)
            failures: list[str] = []
            for memory_id, (digest, forgotten) in model.items():
                got = mems.get(memory_id)
                if got is None or got["sha"] != digest or got["forgotten"] != forgotten:
                    lost += 1
                    failures.append(f"acknowledged {memory_id} lost or changed: {got}")
            for old, new in successor.items():
                current = old in mems and new in model and not model[new][1]
                if current and mems[old]["superseded_by"] != new:
                    lost += 1
                    failures.append(f"{old} superseded by {mems[old]['superseded_by']}, not {new}")
            unknown = set(mems) - set(model)
            assert not unknown, f"trial {trial}: memories nobody wrote: {sorted(unknown)[:5]}"
            assert failures == [], f"trial {trial} (seed {SEED}):\n" + "\n".join(failures[:20])

            # Whole batches only, even among memories the model learned from the store.
            sizes: dict[str, list[int]] = {}
            for m in mems.values():
                assert m["content_ok"], m
                assert m["token_ok"], m
                if m["metadata"]["kind"] == "batch":
                    sizes.setdefault(m["metadata"]["batch"], []).append(m["metadata"]["size"])
            for batch, found in sizes.items():
                # A vacuum drops forgotten members, so a batch may only shrink by those.
                dropped = sum(i.startswith(batch + "-") for i in vacuumed)
                assert len(found) + dropped == found[0], (
                    f"batch {batch}: {len(found)} of {found[0]} present, {dropped} vacuumed"
                )

            # Reads agree with the rows: get, stats, the lexical postings, redaction.
            live = {i for i, (_, forgotten) in model.items() if not forgotten}
            want = {"live": len(live), "forgotten": len(model) - len(live)}
            assert dump["stats"] == {**want, "lexical_documents": len(live)}
            for memory_id in sample:
                want_get = model[memory_id][0] if memory_id in live else None
                assert dump["get"][memory_id] == want_get, memory_id
                findable = memory_id in live and mems[memory_id]["superseded_by"] is None
                want_hits = [memory_id] if findable else []
                got_hits = dump["recall"][memory_id]
                assert got_hits == want_hits, f"recall of {memory_id}'s token: {got_hits}"
                want_secret = [] if memory_id in redacted else want_hits
                got_secret = dump["secret"][memory_id]
                if got_secret != want_secret:
                    leaks += 1
                assert got_secret == want_secret, f"{memory_id}'s original words: {got_secret}"
    finally:
        for child in [*spawned, *dumpers]:
            if child.poll() is None:
                child.kill()
                child.wait()

    figures(
        trials=TRIALS, acknowledged_writes=acked_writes, lost=lost, tombstone_leaks=leaks,
        in_flight_committed=in_flight_seen, by_kind=acked_kinds, memories=len(model), seed=SEED,
        elapsed_s=round(time.monotonic() - started, 1),
    )  # fmt: skip
    assert lost == 0
    assert leaks == 0
    assert TRIALS >= 20
    assert acked_writes >= TRIALS, "the writers acknowledged too little to prove anything"
    assert len(acked_kinds) == 6, f"some kinds of call were never acknowledged: {acked_kinds}"
