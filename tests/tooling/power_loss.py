"""R3 tooling: record the engine's own file operations, replay them as power-loss states.

Three parts, used by ``tests/reliability/test_power_loss.py``:

``power_loss.py record OUT [MUTANT]``
    Runs a fixed workload (remember / remember_many / forget with vectors from the
    hashing embedder, close and reopen, the periodic index save, vacuum, a
    re-embed) on ``OUT/store/s.mind`` while recording, at the
    ``embedmind.backend.sqlite.fileio`` layer, every operation on the engine's own files
    (create, the bytes written, fsync of a file, rename, unlink, fsync of the
    directory) to ``OUT/log.jsonl``. After every SQLite commit it appends a
    ``commit`` event and copies the database as it stands (SQLite's backup API) to
    ``OUT/db/<n>.sqlite``; around every workload call it appends ``begin`` and
    ``ack`` events naming the memories the call adds and forgets. ``MUTANT``
    (``no-dirsync`` or ``no-fsync``) removes one of the engine's syncs, to prove
    the harness notices.

:func:`crash_state`
    Replays a prefix of the log and draws, from a seeded RNG, what the disk could
    hold after power loss at that point (the model is in its docstring).

``power_loss.py check BATCH.json``
    Opens each materialised state in this (child) process and prints one JSON line
    per state: whether the open succeeded, whether an acknowledged memory is
    missing, whether vector recall equals a brute-force cosine over the stored
    vectors, whether the index file was trusted (and whether its checksum matched
    the registry), and whether a second open trusts the file the first one left.

Only the engine's own files are modelled. SQLite's files are SQLite's business:
with ``synchronous=FULL`` a commit that returned is durable, so each state takes
the database exactly as of the last commit that returned before the cut.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import random
import stat
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STORE_NAME = "s.mind"
INDEX_NAME = STORE_NAME + "-vectors"
DB_NAMES = frozenset(STORE_NAME + s for s in ("", "-wal", "-shm", "-journal"))
PAGE = 4096
"""Unsynced data is persisted (or not) a page at a time, like the page cache writes it back."""
DIMS = 32
K = 5
QUERIES = ["apple orchard", "river boat", "mountain snow", "city lights", "forest ocean"]
WORDS = "apple orchard river boat mountain snow city lights forest desert ocean valley".split()

Event = dict[str, Any]
FILE_OPS = frozenset(("create", "write", "truncate", "fsync", "rename", "unlink", "dirsync"))


# -- embedders -------------------------------------------------------------------------------


def embedders() -> dict[str, Any]:
    """The two models of the workload by ``model_id``: before and after the re-embed."""
    import numpy as np

    from embedmind.embedders.hashing import HashingEmbedder

    class Reversed(HashingEmbedder):
        """The hashing embedder with its coordinates reversed: another model, same dims."""

        def __init__(self, dims: int) -> None:
            super().__init__(dims)
            self.model_id = f"hashing-reversed-{dims}"
            self.fingerprint = hashlib.sha256(f"reversed:{dims}".encode()).hexdigest()

        def embed_query(self, text: str) -> Any:
            return np.ascontiguousarray(super().embed_query(text)[::-1])

    first, second = HashingEmbedder(DIMS), Reversed(DIMS)
    return {first.model_id: first, second.model_id: second}


def content(i: int) -> str:
    """A memory's text; the unique token keeps every vector distinct."""
    return " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3)) + f" token{i}"


# -- recording -------------------------------------------------------------------------------


class Recorder:
    """Shadows the engine's files and appends what happens to them to a JSON-lines log.

    usearch writes an index file's bytes from C++, out of Python's sight, so the
    written bytes are found by comparing each file with its shadow just before the
    next recorded operation: every change since is emitted as page-sized writes.
    Nothing touches those files between two operations but the engine, so the log
    is complete. A file the shadow does not know (created, replaced or removed
    without going through ``fileio``) is logged as ``unobserved``: the test fails on it.
    """

    def __init__(self, out: Path) -> None:
        self.dir = os.path.abspath(out / "store")
        os.makedirs(self.dir)
        self.snapshots = out / "db"
        self.snapshots.mkdir()
        self.log = open(out / "log.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self.names: dict[str, int] = {}  # name -> shadow inode
        self.inodes: dict[int, int] = {}  # real st_ino -> shadow inode
        self.content: dict[int, bytes] = {}
        self.fds: dict[int, str] = {}
        self.commits = 0

    def event(self, **values: Any) -> None:
        self.log.write(json.dumps(values) + "\n")

    def name_of(self, path: str | os.PathLike[str]) -> str | None:
        """The engine-file name of ``path`` in the store directory, else None."""
        absolute = os.path.abspath(os.fspath(path))
        if os.path.dirname(absolute) != self.dir:
            return None
        name = os.path.basename(absolute)
        return None if name in DB_NAMES else name

    def _new_inode(self, name: str, real: int) -> None:
        inode = len(self.content)
        self.names[name], self.inodes[real], self.content[inode] = inode, inode, b""
        self.event(op="create", name=name, inode=inode)

    def flush(self) -> None:
        """Emit the bytes written to the engine's files since the last operation."""
        present = set()
        for name in sorted(os.listdir(self.dir)):
            if name in DB_NAMES:
                continue
            present.add(name)
            info = os.lstat(os.path.join(self.dir, name))
            if name not in self.names or self.inodes.get(info.st_ino) != self.names[name]:
                self.event(op="unobserved", name=name, what="appeared or was replaced")
                self._new_inode(name, info.st_ino)
            if not stat.S_ISREG(info.st_mode):
                continue
            inode = self.names[name]
            with open(os.path.join(self.dir, name), "rb") as handle:
                now = handle.read()
            self._diff(inode, self.content[inode], now)
            self.content[inode] = now
        for name in [n for n in self.names if n not in present]:
            self.event(op="unobserved", name=name, what="vanished")
            del self.names[name]

    def _diff(self, inode: int, before: bytes, after: bytes) -> None:
        if len(after) < len(before):
            self.event(op="truncate", inode=inode, size=len(after))
            before = before[: len(after)]
        for offset in range(0, len(after), PAGE):
            page = after[offset : offset + PAGE]
            if page != before[offset : offset + PAGE]:
                data = base64.b64encode(page).decode()
                self.event(op="write", inode=inode, offset=offset, data=data)

    # The operations fileio performs, wrapped: flush, do it, log it.

    def open(self, path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        self.flush()
        existed = os.path.lexists(path)
        fd = os.open(path, flags, mode, **kwargs)
        self.fds[fd] = os.path.abspath(os.fspath(path))
        name = self.name_of(path)
        if name is not None and not existed:
            self._new_inode(name, os.fstat(fd).st_ino)
        return fd

    def mkstemp(self, *args: Any, **kwargs: Any) -> tuple[int, str]:
        import tempfile

        self.flush()
        fd, path = tempfile.mkstemp(*args, **kwargs)
        self.fds[fd] = os.path.abspath(path)
        name = self.name_of(path)
        if name is not None:
            self._new_inode(name, os.fstat(fd).st_ino)
        return fd, path

    def close(self, fd: int) -> None:
        self.fds.pop(fd, None)
        os.close(fd)

    def fsync(self, fd: int, mutant: str = "") -> None:
        # A mutant skips the sync and its log entry: what a forgotten fsync does.
        self.flush()
        path = self.fds.get(fd)
        if path == self.dir:
            if mutant != "no-dirsync":
                os.fsync(fd)
                self.event(op="dirsync")
            return
        if mutant != "no-fsync":
            os.fsync(fd)
            inode = self.inodes.get(os.fstat(fd).st_ino)
            if inode is not None and path is not None and self.name_of(path) is not None:
                self.event(op="fsync", inode=inode)

    def replace(self, src: Any, dst: Any) -> None:
        self.flush()
        os.replace(src, dst)
        old, new = self.name_of(src), self.name_of(dst)
        if old is not None and new is not None:
            self.names[new] = self.names.pop(old)
            self.event(op="rename", src=old, dst=new)

    def unlink(self, path: Any) -> None:
        self.flush()
        os.unlink(path)
        name = self.name_of(path)
        if name is not None:
            self.names.pop(name, None)
            self.event(op="unlink", name=name)

    def commit(self, store_path: str) -> None:
        """Log a commit that returned and keep a copy of the database as it now is."""
        import apsw

        self.flush()
        self.commits += 1
        target = apsw.Connection(str(self.snapshots / f"{self.commits}.sqlite"))
        source = apsw.Connection(store_path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            with target.backup("main", source, "main") as backup:
                backup.step()
            entry = source.execute(
                "SELECT size, checksum FROM index_files WHERE name = 'memory-vectors'"
            ).fetchone()
        except apsw.SQLError:  # no schema yet
            entry = None
        finally:
            source.close()
            target.close()
        # Whether the registry, as committed, names the file now at the index path:
        # then that file must survive any power loss until the name is touched again.
        digest = _file_digest(os.path.join(self.dir, INDEX_NAME))
        registered = entry is not None and digest == (entry[0], entry[1])
        self.event(op="commit", db=self.commits, registered=registered)


class _Proxy:
    """Stands in for a module inside ``fileio`` only: the named functions are replaced."""

    def __init__(self, module: Any, **replacements: Callable[..., Any]) -> None:
        self._module = module
        self.__dict__.update(replacements)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


@contextlib.contextmanager
def recording(rec: Recorder, mutant: str) -> Iterator[None]:
    """Route fileio's ``os`` and ``tempfile`` through ``rec`` and log every commit."""
    import tempfile

    from embedmind.backend.sqlite import database, fileio

    real_write = database.Database.write

    @contextlib.contextmanager
    def write(self: Any) -> Iterator[Any]:
        with real_write(self) as conn:
            yield conn
        rec.commit(self.path)

    proxy_os = _Proxy(
        os,
        open=rec.open,
        close=rec.close,
        fsync=lambda fd: rec.fsync(fd, mutant),
        replace=rec.replace,
        unlink=rec.unlink,
    )
    saved = fileio.os, fileio.tempfile
    fileio.os, fileio.tempfile = proxy_os, _Proxy(tempfile, mkstemp=rec.mkstemp)  # type: ignore[assignment]
    database.Database.write = write  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        fileio.os, fileio.tempfile = saved  # type: ignore[assignment]
        database.Database.write = real_write  # type: ignore[method-assign]


def record(out: Path, mutant: str = "") -> None:
    """Run the workload on ``out/store/s.mind`` and log it (see the module docstring)."""
    import embedmind
    from embedmind.engine import commit as commit_path

    # The periodic save (every 20,000 vector changes in production) after 40 here,
    # so it happens inside a remember_many batch like it does on a big store.
    commit_path.SAVE_INDEX_AFTER = 40
    rec = Recorder(out)
    path = os.path.join(rec.dir, STORE_NAME)
    first, second = embedders().values()
    counter = iter(range(1_000_000))
    holder: dict[str, Any] = {}

    def call(
        name: str, run: Callable[[], object], adds: dict[str, str] | None = None,
        forgets: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        rec.flush()
        rec.event(op="begin", call=name, adds=adds or {}, forgets=list(forgets))
        run()
        rec.flush()
        rec.event(op="ack", call=name)

    def open_store(embedder: Any) -> None:
        def run() -> None:
            holder["s"] = embedmind.Store.open(path, embedder=embedder)
            rec.commit(path)  # the schema a first open creates is a commit too

        call("open", run)

    def batch(n: int, size: int) -> None:
        drafts = {f"m{i}": content(i) for i in (next(counter) for _ in range(n))}
        call(
            "remember_many",
            lambda: holder["s"].remember_many(
                [embedmind.Draft(c, id=i) for i, c in drafts.items()], batch_size=size
            ),
            drafts,
        )

    def remember() -> None:
        i = next(counter)
        call(
            "remember", lambda: holder["s"].remember(content(i), id=f"m{i}"), {f"m{i}": content(i)}
        )

    def forget(*numbers: int) -> None:
        for i in numbers:
            call("forget", lambda i=i: holder["s"].forget(f"m{i}"), forgets=(f"m{i}",))

    def close() -> None:
        call("close", lambda: holder.pop("s").close())

    with recording(rec, mutant):
        open_store(first)
        batch(60, 20)
        remember()
        remember()
        forget(3, 17, 42)
        close()  # the first save
        open_store(first)
        batch(90, 30)  # crosses SAVE_INDEX_AFTER: saves inside write transactions
        forget(5, 61, 99)
        remember()
        close()
        open_store(first)
        call("vacuum", lambda: holder["s"].vacuum())  # rebuilds and force-saves the index
        remember()
        close()
        # A re-embed drops the index registry and unlinks the index file.
        call("reembed", lambda: embedmind.reembed(path, second, batch_size=50))
        open_store(second)
        batch(30, 15)
        forget(2, 70)
        close()
        open_store(second)
        remember()
        close()
    rec.flush()
    rec.log.close()


# -- crash states ----------------------------------------------------------------------------


def load_log(out: Path) -> list[Event]:
    """The recorded events, with written bytes decoded."""
    events = []
    for line in (out / "log.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["op"] == "write":
            event["data"] = base64.b64decode(event["data"])
        events.append(event)
    return events


@dataclass
class _Inode:
    synced: bytes = b""
    pending: list[Event] = field(default_factory=list)
    current: bytearray = field(default_factory=bytearray)


@dataclass
class CrashState:
    """What the disk holds after power loss at one cut point of the log."""

    cut: int
    files: dict[str, bytes]
    """The engine's files by name (a missing name is absent)."""
    db: int | None
    """The database snapshot of the last commit before the cut (None: no commit yet)."""
    must_live: dict[str, str]
    """Acknowledged live memories (id -> content), less the in-flight call's forgets."""
    may_live: dict[str, str]
    """Memories the call in flight at the cut may or may not have left live."""
    must_trust: bool
    """That commit registered the file then at the index path, and no operation on the
    name followed: the file must still be there, whole (its syncs preceded the commit)."""
    describe: str


def _apply(data: bytearray, write: Event, length: int | None = None) -> None:
    if write["op"] == "truncate":
        del data[write["size"] :]
        return
    chunk = write["data"] if length is None else write["data"][:length]
    offset = write["offset"]
    if len(data) < offset:
        data.extend(bytes(offset - len(data)))  # the size grew before the data: a hole of zeros
    data[offset : offset + len(chunk)] = chunk


def crash_state(
    events: list[Event], cut: int, rng: random.Random, *, everything: bool = False
) -> CrashState:
    """The disk after power loss once ``events[:cut]`` have happened.

    With ``everything``, every name and write reaches the disk whole (the power
    went out just after the cut, with nothing lost): the deterministic case.

    The model, for the engine's own files:

    - A file's bytes are those of its last fsync plus an arbitrary subset of the
      writes since, applied in an arbitrary order, each possibly torn (only a
      prefix of it reaches the disk). A write past the end extends the file; a gap
      left by a write that did not make it reads as zeros.
    - Names (create, rename, unlink) are durable once the directory is fsynced.
      Each one since may be lost or kept independently; the kept ones apply in
      their original order (a journal replays in order), and one whose source
      name no longer exists is dropped. A lost rename keeps the old name and the
      old content; a lost unlink keeps the file.
    - The database is the snapshot of the last commit that returned before the cut.

    How much survives is itself drawn per state (nothing, everything, or a
    random fraction), so the extremes are covered as often as the middle.
    """
    inodes: dict[int, _Inode] = {}
    names: dict[str, int] = {}
    synced_names: dict[str, int] = {}
    pending_names: list[Event] = []
    acked: dict[str, str] = {}
    in_flight: Event | None = None
    db: int | None = None
    registered = touched = False
    for event in events[:cut]:
        op = event["op"]
        if op == "create":
            inodes[event["inode"]] = _Inode()
            names[event["name"]] = event["inode"]
        elif op in ("write", "truncate"):
            inode = inodes[event["inode"]]
            _apply(inode.current, event)
            inode.pending.append(event)
            touched = touched or names.get(INDEX_NAME) == event["inode"]
        elif op == "fsync":
            inode = inodes[event["inode"]]
            inode.synced, inode.pending = bytes(inode.current), []
        elif op == "rename":
            names[event["dst"]] = names.pop(event["src"])
        elif op == "unlink":
            names.pop(event["name"])
        elif op == "dirsync":
            synced_names, pending_names = dict(names), []
        elif op == "commit":
            db, registered, touched = event["db"], event["registered"], False
        elif op == "begin":
            in_flight = event
        elif op == "ack":
            assert in_flight is not None
            acked.update(in_flight["adds"])
            for memory_id in in_flight["forgets"]:
                acked.pop(memory_id, None)
            in_flight = None
        if op in ("create", "rename", "unlink"):
            pending_names.append(event)
            touched = touched or INDEX_NAME in (
                event.get("name"),
                event.get("src"),
                event.get("dst"),
            )

    keep_name = 1.0 if everything else rng.choice((0.0, 1.0, rng.random()))
    keep_write = 1.0 if everything else rng.choice((0.0, 1.0, rng.random()))
    tear = 0.0 if everything else rng.choice((0.0, 0.5))
    survivors = dict(synced_names)
    kept = 0
    for event in pending_names:
        if rng.random() >= keep_name:
            continue
        if event["op"] == "create":
            survivors.setdefault(event["name"], event["inode"])
        elif event["op"] == "rename" and event["src"] in survivors:
            survivors[event["dst"]] = survivors.pop(event["src"])
        elif event["op"] == "unlink":
            survivors.pop(event["name"], None)
        else:
            continue
        kept += 1
    files = {}
    writes = torn = 0
    for name, number in sorted(survivors.items()):
        inode = inodes[number]
        data = bytearray(inode.synced)
        chosen = [w for w in inode.pending if rng.random() < keep_write]
        rng.shuffle(chosen)
        for write in chosen:
            if write["op"] == "write" and rng.random() < tear:
                _apply(data, write, rng.randrange(len(write["data"])))
                torn += 1
            else:
                _apply(data, write)
        writes += len(chosen)
        files[name] = bytes(data)

    must_live, may_live = dict(acked), {}
    if in_flight is not None:
        may_live.update(in_flight["adds"])
        for memory_id in in_flight["forgets"]:
            if memory_id in must_live:
                may_live[memory_id] = must_live.pop(memory_id)
    unsynced = sum(len(i.pending) for i in inodes.values())
    describe = (
        f"cut {cut}/{len(events)} db={db} names kept {kept}/{len(pending_names)} "
        f"writes kept {writes}/{unsynced} torn {torn}"
    )
    return CrashState(cut, files, db, must_live, may_live, registered and not touched, describe)


def materialise(state: CrashState, out: Path, recording_dir: Path) -> None:
    """Write ``state`` into the empty directory ``out`` (the store is ``out/s.mind``)."""
    out.mkdir(parents=True)
    if state.db is not None:
        snapshot = (recording_dir / "db" / f"{state.db}.sqlite").read_bytes()
        (out / STORE_NAME).write_bytes(snapshot)
    for name, data in state.files.items():
        (out / name).write_bytes(data)
    for path in out.iterdir():
        path.chmod(0o600)


# -- checking (in a child process) -----------------------------------------------------------


def _file_digest(path: str) -> tuple[int, str] | None:
    """Size and BLAKE2b-128 of a regular file, computed here (not with the engine's code)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    data = Path(path).read_bytes()
    return len(data), hashlib.blake2b(data, digest_size=16).hexdigest()


def _recorded_model(path: str) -> str | None:
    import apsw

    if not os.path.exists(path):
        return None
    conn = apsw.Connection(path)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder.model_id'").fetchone()
    finally:
        conn.close()
    return None if row is None else str(row[0])


def check_state(spec: dict[str, Any], models: dict[str, Any]) -> dict[str, Any]:
    """Open one state and report what R3 asks (see the module docstring)."""
    import numpy as np

    import embedmind
    from embedmind.backend.sqlite import vector_rows

    path = os.path.join(spec["dir"], STORE_NAME)
    report: dict[str, Any] = {"state": spec["state"], "errors": [], "lost": []}
    model_id = _recorded_model(path)
    embedder = models[model_id] if model_id else next(iter(models.values()))
    try:
        store = embedmind.Store.open(path, embedder=embedder)
    except Exception:
        report["failed_open"] = traceback.format_exc(limit=5)
        return report
    with store:
        with store._db.read() as conn:
            entry = vector_rows.index_file(conn, vector_rows.MEMORY.index_name)
        digest = _file_digest(path + "-vectors")
        matches = entry is not None and digest == (entry.size, entry.checksum)
        report["registered"], report["matches"] = entry is not None, matches
        results = {q: store.recall(q, k=K, mode="vector").ids for q in QUERIES}
        assert store._vectors is not None
        report["trusted"] = trusted = store._vectors.rebuilt == 0
        if trusted and not matches:
            report["errors"].append("an index file was trusted although its checksum differs")
        if matches and not trusted:
            report["errors"].append("an index file matching its checksum was not used")
        if spec["must_trust"] and entry is not None and not matches:
            report["errors"].append(
                f"the registered index file did not survive power loss: {digest} != {entry}"
            )
        live = {m.id: m.content for m in store.iter()}
        for memory_id, text in spec["must_live"].items():
            if live.get(memory_id) != text:
                report["lost"].append(memory_id)
        allowed = spec["must_live"].keys() | spec["may_live"].keys()
        phantoms = sorted(set(live) - allowed)
        if phantoms:
            report["errors"].append(f"memories never written (or forgotten) are live: {phantoms}")
        stored = store.vectors(list(live))
        for query, ids in results.items():
            q = np.asarray(embedder.embed_query(query), dtype=np.float64)
            cosine = {
                i: float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q))) for i, v in stored.items()
            }
            best = sorted(cosine.values(), reverse=True)[:K]
            got = [cosine.get(i, float("nan")) for i in ids]
            # f16 in the index blurs near-ties: compare scores, not ids.
            if len(got) != len(best) or not np.allclose(got, best, atol=2e-3):
                report["errors"].append(f"vector recall of {query!r}: {got} != brute force {best}")
    # The first open saved what it rebuilt; a second open must trust it.
    with embedmind.Store.open(path, embedder=embedder) as again:
        again.recall(QUERIES[0], k=K, mode="vector")
        assert again._vectors is not None
        report["healed"] = again._vectors.rebuilt == 0
    return report


def check(batch: Path) -> None:
    """Check every state listed in ``batch`` and print one JSON line each."""
    models = embedders()
    for spec in json.loads(batch.read_text(encoding="utf-8")):
        try:
            report = check_state(spec, models)
        except Exception:
            report = {"state": spec["state"], "errors": [traceback.format_exc(limit=8)], "lost": []}
        print(json.dumps(report), flush=True)


def main(argv: list[str]) -> int:
    """``record OUT [MUTANT]`` or ``check BATCH.json``."""
    if argv[:1] == ["record"] and len(argv) in (2, 3):
        record(Path(argv[1]), argv[2] if len(argv) == 3 else "")
        return 0
    if argv[:1] == ["check"] and len(argv) == 2:
        check(Path(argv[1]))
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
