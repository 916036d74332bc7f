"""A writer to be killed with SIGKILL, and a fresh-process dumper to check what survived.

``crash_writer.py write STORE SEED PREFIX [GOFILE]``
    Waits for ``GOFILE`` to exist (when given), opens ``STORE``, prints
    ``READY`` and loops a seeded mixed workload of ``remember``,
    ``remember_many``, ``forget``, supersede (``remember(supersedes=...)``),
    ``redact`` and ``vacuum``. Before each call it prints
    ``BEGIN <op> <ids>`` and after the call returns ``ACK <op> <ids> <detail>``,
    each line flushed before the next call starts, so whatever the parent reads
    after the kill is exactly what the engine had acknowledged (plus at most
    one call in flight)::

        ACK remember <id> <sha>
        ACK batch <id1,id2,...> <sha1,sha2,...>
        ACK forget <id> <True|False>
        ACK supersede <new>,<old> <sha of new>
        ACK redact <id> <sha after redaction>
        ACK vacuum -

``crash_writer.py dump STORE QUERIES OUT``
    Opens ``STORE`` in this fresh process and writes JSON to ``OUT``: every
    memory (superseded and forgotten ones included) with its sha, forgotten
    flag, successor and metadata, ``stats()``, SQLite's ``integrity_check``,
    and for every id in the ``QUERIES`` JSON list, ``get(id)`` and the hits of
    ``recall(token(id), mode="text")`` and of ``recall(secret(id), ...)``.
    It may be started before ``QUERIES`` exists: it waits for the file (the
    test starts it while the trial runs, so the import is not on the clock) and
    touches the store only once the file appears.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time

import apsw

import embedmind

# Words for filler content; tokens that survive the analyzer unchanged enough.
WORDS = (
    "river stone garden lantern copper meadow violet harbor thunder marble "
    "orchard falcon ember glacier willow saddle quartz canyon pepper velvet"
).split()
MAX_SECONDS = 30.0  # the parent kills long before this; the loop is bounded anyway
MAX_OPS = 100_000


def token(memory_id: str) -> str:
    """The one word of a memory's content that no other memory contains."""
    return "tok_" + "".join(ch if ch.isalnum() else "_" for ch in memory_id.lower())


def secret(memory_id: str) -> str:
    """A word only the original content holds: redaction must make it unfindable."""
    return "sec_" + token(memory_id)[4:]


def redacted(memory_id: str) -> str:
    """The content a redaction writes (it keeps the token, drops the secret)."""
    return f"REDACTED {token(memory_id)}"


def sha(content: str, metadata: object) -> str:
    """Fingerprint of exactly what a memory must read back as."""
    blob = json.dumps({"content": content, "metadata": metadata}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _content(rng: random.Random, memory_id: str) -> str:
    # Mostly short, sometimes tens of KiB so one commit spans many pages.
    n = rng.choice((3, 8, 20, 60)) if rng.random() < 0.9 else rng.randint(2_000, 6_000)
    words = [rng.choice(WORDS) for _ in range(n)]
    words.insert(rng.randint(0, n), token(memory_id))
    words.insert(rng.randint(0, n + 1), secret(memory_id))
    return " ".join(words)


def _metadata(rng: random.Random, content: str, **extra: object) -> dict[str, object]:
    return {
        "csha": hashlib.sha256(content.encode()).hexdigest(),
        "n": rng.randint(0, 10**9),
        "nested": {"f": rng.random(), "l": [rng.randint(0, 9) for _ in range(3)]},
        **extra,
    }


def write(path: str, seed: int, prefix: str, go: str | None = None) -> None:
    """Loop the workload until killed (or the bound is reached).

    With ``go``, wait (imported, store not yet opened) until that file exists,
    so the parent can start the next child while it still checks the last one.
    """
    rng = random.Random(seed)
    if go is not None:
        deadline = time.monotonic() + MAX_SECONDS
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.002)
    out = sys.stdout

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    store = embedmind.Store.open(path, embedder=None)
    live = [m.id for m in store.iter()]  # forget candidates, from earlier trials too
    say("READY")
    deadline = time.monotonic() + MAX_SECONDS
    for n in range(MAX_OPS):
        if time.monotonic() > deadline:
            break
        roll = rng.random()
        if roll < 0.40:
            memory_id = f"{prefix}-s{n}"
            content = _content(rng, memory_id)
            metadata = _metadata(rng, content, kind="single")
            say(f"BEGIN remember {memory_id}")
            store.remember(content, id=memory_id, metadata=metadata)
            say(f"ACK remember {memory_id} {sha(content, metadata)}")
            live.append(memory_id)
        elif roll < 0.75 or not live:
            size = rng.randint(1, 20)
            batch = f"{prefix}-b{n}"
            items = []
            for i in range(size):
                memory_id = f"{batch}-{i}"
                content = _content(rng, memory_id)
                metadata = _metadata(rng, content, kind="batch", batch=batch, size=size, i=i)
                items.append({"id": memory_id, "content": content, "metadata": metadata})
            ids = ",".join(d["id"] for d in items)
            say(f"BEGIN batch {ids}")
            store.remember_many(items, batch_size=size)  # one transaction
            shas = ",".join(sha(d["content"], d["metadata"]) for d in items)
            say(f"ACK batch {ids} {shas}")
            live += [d["id"] for d in items]
        elif roll < 0.87:
            memory_id = live.pop(rng.randrange(len(live)))
            say(f"BEGIN forget {memory_id}")
            result = store.forget(memory_id)
            say(f"ACK forget {memory_id} {result}")
        elif roll < 0.94:
            old = live.pop(rng.randrange(len(live)))  # a head: superseding history is refused
            memory_id = f"{prefix}-u{n}"
            content = _content(rng, memory_id)
            metadata = _metadata(rng, content, kind="single")
            say(f"BEGIN supersede {memory_id},{old}")
            store.remember(content, id=memory_id, metadata=metadata, supersedes=[old])
            say(f"ACK supersede {memory_id},{old} {sha(content, metadata)}")
            live.append(memory_id)
        elif roll < 0.98:
            memory_id = rng.choice(live)
            say(f"BEGIN redact {memory_id}")
            memory = store.redact(memory_id, redacted(memory_id))
            say(f"ACK redact {memory_id} {sha(memory.content, memory.metadata)}")
        else:
            say("BEGIN vacuum -")
            store.vacuum()
            say("ACK vacuum -")
    store.close()
    say("DONE")


QUERIES_WAIT_SECONDS = 120.0
"""How long a dumper waits for its queries file, should the test be gone."""


def dump(path: str, queries_path: str, out_path: str) -> None:
    """Write everything the parent verifies, read by a process that never wrote."""
    deadline = time.monotonic() + QUERIES_WAIT_SECONDS
    while not os.path.exists(queries_path):  # the test renames it into place whole
        if time.monotonic() > deadline:
            raise SystemExit(f"no queries file {queries_path} appeared")
        time.sleep(0.002)
    with open(queries_path, encoding="utf-8") as f:
        queries: list[str] = json.load(f)
    result: dict[str, object] = {}
    store = embedmind.Store.open(path, embedder=None)
    memories = {}
    duplicates = []
    for m in store.iter(include_forgotten=True, include_superseded=True):
        if m.id in memories:
            duplicates.append(m.id)
        memories[m.id] = {
            "sha": sha(m.content, m.metadata),
            "forgotten": m.forgotten,
            "superseded_by": m.superseded_by,
            "metadata": m.metadata,
            "content_ok": m.content == redacted(m.id)
            or hashlib.sha256(m.content.encode()).hexdigest() == m.metadata.get("csha"),
            "token_ok": token(m.id) in m.content.split(),
        }
    got, recalls, secrets = {}, {}, {}
    for memory_id in queries:
        hit = store.get(memory_id)
        got[memory_id] = None if hit is None else sha(hit.content, hit.metadata)
        hits = store.recall(token(memory_id), mode="text", k=20)
        recalls[memory_id] = [h.memory.id for h in hits]
        hits = store.recall(secret(memory_id), mode="text", k=20)
        secrets[memory_id] = [h.memory.id for h in hits]
    stats = store.stats()
    store.close()
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    integrity = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    conn.close()
    result.update(
        memories=memories,
        duplicates=duplicates,
        get=got,
        recall=recalls,
        secret=secrets,
        stats={
            "live": stats.live,
            "forgotten": stats.forgotten,
            "lexical_documents": stats.lexical_documents,
        },
        integrity=integrity,
    )
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)


def main(argv: list[str]) -> int:
    """Dispatch ``write`` or ``dump``."""
    if argv[:1] == ["write"] and len(argv) in (4, 5):
        write(argv[1], int(argv[2]), argv[3], *argv[4:])
        return 0
    if argv[:1] == ["dump"] and len(argv) == 4:
        dump(argv[1], argv[2], argv[3])
        return 0
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
