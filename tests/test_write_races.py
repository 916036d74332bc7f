"""Writers racing on the same memories: one current version per fact, and an upsert stays one.

Two writers make the same calls at the same moment, :data:`N` pairs per race
(:mod:`tooling.race_workers`), as two threads sharing one ``Store`` and as two
processes. Counted over every pair:

* **forks**: a supersede of one version acknowledged to both writers. One
  wins; the other gets ``InvalidInputError`` and stores nothing. (Both would
  leave two current versions of one fact, the second one ``lineage`` never shows.)
* **raw errors**: anything that is not an embedmind error.

Both must be 0. Writes of one id in one namespace all succeed and leave one
row per id; in two namespaces one wins and the other gets ``ConflictError``.
After each race the text index agrees with the stored contents: an upsert
that read the content it replaces before the other writer committed would
leave the other's postings on a row that no longer says it.

``tests/postgres/test_conformance_write_races.py`` runs these on PostgreSQL,
where writes are READ COMMITTED: before writes held the rows they read, 78-105
of the 200 supersedes forked, and one upsert of each new id raised
``StorageError`` ("UniqueViolation ... check that the server is up").
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tooling import race_workers
from tooling.children import spawn, start_together
from tooling.race_workers import NAMESPACE, RACES, content, memory_id, namespace

import embedmind
from embedmind.backend.protocol import ConcurrentWriteError
from embedmind.drafts import prepare
from embedmind.engine import commit
from embedmind.model import Draft

if TYPE_CHECKING:
    from conftest import Figures

N = 200
"""Pairs of racing calls per race."""
NOW = 1_900_000_000_000_000
"""A write instant (µs) after the store's own writes."""
WRITERS = ("a", "b")
PROCESS_RACES = ("supersede", "upsert_new")
"""The races two processes run too, the issue's two (threads run every race): one
child and this process, since starting a process takes seconds on a loaded machine."""
TOOL = Path(__file__).resolve().parent / "tooling" / "race_workers.py"
Outcomes = dict[str, list[str]]
"""Per writer, the outcome of each of its calls (``race_workers.call``)."""


@pytest.fixture
def racing(tmp_path: Path) -> Iterator[embedmind.Store]:
    """A store on a file (so processes share it), seeded for every race.

    Without date words, so the text index holds exactly the contents' words
    (``_check_text_index``); the child reopening it keeps that setting.
    """
    with embedmind.Store.open(
        tmp_path / "races.mind",
        embedder=None,
        synchronous=race_workers.SYNCHRONOUS,
        date_words=False,
    ) as store:
        race_workers.seed(store, N)
        yield store


@pytest.mark.parametrize("race", RACES)
def test_two_threads_racing_on_one_store(
    racing: embedmind.Store, race: str, figures: Figures
) -> None:
    barrier = threading.Barrier(len(WRITERS))
    outcomes: Outcomes = {}

    def writer(me: str) -> None:
        barrier.wait()
        outcomes[me] = race_workers.race(racing, race, me, N)

    threads = [threading.Thread(target=writer, args=(me,)) for me in WRITERS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _check(racing, race, outcomes, figures)


def test_two_processes_racing_on_one_store(
    racing: embedmind.Store, tmp_path: Path, figures: Figures
) -> None:
    """This process is writer ``a``; a child process opening the same store is ``b``."""
    sync = tmp_path / "sync"
    child, out, err = spawn(TOOL, tmp_path, "b", racing.path, "b", N, sync, *PROCESS_RACES)
    mine = {}
    for race in PROCESS_RACES:
        start_together(sync, [(child, out, err)], stages=(race,))
        time.sleep(max(0.0, float(Path(f"{sync}.{race}").read_text()) - time.time()))
        mine[race] = race_workers.race(racing, race, "a", N)
    assert child.wait(timeout=300) == 0, err.read_text()[-3000:]
    theirs = json.loads(out.read_text())
    for race in PROCESS_RACES:
        _check(racing, race, {"a": mine[race], "b": theirs[race]}, figures)


def test_two_imports_of_one_file_at_once_both_succeed(
    racing: embedmind.Store, tmp_path: Path
) -> None:
    """An import upserts too: two of one file, its ids new to the store, at one moment."""
    export = tmp_path / "export.jsonl"
    racing.export_jsonl(export)
    with embedmind.Store.open(tmp_path / "imported.mind", embedder=None) as store:
        barrier = threading.Barrier(len(WRITERS))
        outcomes: list[str] = []

        def importer() -> None:
            barrier.wait()
            try:
                store.import_jsonl(export)
                outcomes.append("ok")
            except Exception as e:  # counted, and shown when the test fails
                outcomes.append(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=importer) for _ in WRITERS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert outcomes == ["ok", "ok"], outcomes
        assert store.stats().live == racing.stats().live


def test_a_write_reads_a_row_as_the_writer_holding_it_commits_it(store: embedmind.Store) -> None:
    """``RecordWrites.find`` holds the row: a second writer waits, then sees the first's write.

    The races above meet this by chance; here it is forced. A writer reading
    the row while another's upsert of it is in flight must not see the content
    being replaced: it would keep that content's postings, or supersede a
    version that is already superseded.
    """
    store.remember("the first words", id="x")
    backend = store._backend
    seen: list[str] = []

    def second_writer() -> None:
        with backend.write() as session:
            found = session.records.find("x")
            seen.append("missing" if found is None else found.content)

    with backend.write() as session:
        held = session.records.find("x")
        assert held is not None
        session.records.replace(
            held.key, prepare(Draft("the second words", id="x"), NOW), held.created_at
        )
        other = threading.Thread(target=second_writer)
        other.start()
        other.join(timeout=0.3)
        assert seen == [], seen  # it waits for this transaction
    other.join(timeout=30)
    assert seen == ["the second words"], seen


def test_a_write_rolled_back_by_racing_writers_runs_again_then_says_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(commit, "RACE_PAUSE", 0.0)
    runs: list[int] = []

    def lost(then: str | None) -> str:
        runs.append(len(runs))
        if then is None or len(runs) < 3:
            raise ConcurrentWriteError("s.mind", "another writer stored the same id")
        return then

    assert commit.retrying(lambda: lost("written")) == "written"
    assert len(runs) == 3
    runs.clear()
    with pytest.raises(embedmind.StoreBusyError, match=r"the same id.*retry it"):
        commit.retrying(lambda: lost(None))
    assert len(runs) == commit.RACE_RUNS


def test_two_supersedes_of_one_version_in_one_batch_are_refused(
    store: embedmind.Store,
) -> None:
    store.remember("the office is on floor 2", id="old")
    with pytest.raises(embedmind.InvalidInputError, match="already superseded by 'a'"):
        store.remember_many(
            [
                {"content": "the office is on floor 3", "id": "a", "supersedes": ["old"]},
                {"content": "the office is on floor 4", "id": "b", "supersedes": ["old"]},
            ]
        )
    assert store.get_many(["a", "b"]) == []  # the batch wrote nothing
    assert store.get("old").superseded_by is None  # type: ignore[union-attr]


def test_writing_the_same_new_version_again_is_an_upsert(store: embedmind.Store) -> None:
    # A write that may have committed before its error is retried with the same id
    # (docs/how-to/postgres.md): its supersede must not refuse itself.
    store.remember("the office is on floor 2", id="old")
    store.remember("the office is on floor 3", id="new", supersedes=["old"])
    again = store.remember("the office is on floor 3, room 12", id="new", supersedes=["old"])
    assert store.get("old").superseded_by == "new"  # type: ignore[union-attr]
    assert [m.id for m in store.lineage("old").newer] == ["new"]
    assert store.get("new") == again
    with pytest.raises(embedmind.InvalidInputError, match="already superseded by 'new'"):
        store.remember("the office is on floor 5", id="other", supersedes=["old"])


def _check(store: embedmind.Store, race: str, outcomes: Outcomes, figures: Figures) -> None:
    """Assert what ``race`` must leave: no fork, no raw error, one row per id, an exact index."""
    pairs = list(zip(*(outcomes[me] for me in WRITERS), strict=True))
    assert len(pairs) == N
    winners = [[me for me, o in zip(WRITERS, pair, strict=True) if o == "ok"] for pair in pairs]
    refused = Counter(o for pair in pairs for o in pair if o != "ok")
    raw = sorted(o for o in refused if o.startswith("raw"))
    forks = sum(len(w) > 1 for w in winners) if race in ("supersede", "namespaces") else 0
    figures(race=race, pairs=N, forks=forks, raw_errors=len(raw), refused=dict(refused))
    assert raw == [], raw[:3]
    assert forks == 0, f"{forks} of {N} supersedes forked"
    stored = {m.id: m for m in store.get_many(_ids(race))}
    if race in ("supersede", "namespaces"):
        assert all(len(w) == 1 for w in winners)  # one wins, never none
        expected = "InvalidInputError" if race == "supersede" else "ConflictError"
        assert refused == {expected: N}, refused
        assert sorted(stored) == sorted(memory_id(race, w[0], i) for i, w in enumerate(winners))
    else:
        assert refused == {}, refused
        assert len(stored) == N  # one row per id
    for i, won in enumerate(winners):
        me = won[0] if len(won) == 1 else None
        _check_memory(store, race, i, me, stored)
    _check_text_index(store, race, stored)


def _ids(race: str) -> list[str]:
    return sorted({memory_id(race, me, i) for me in WRITERS for i in range(N)})


def _check_memory(
    store: embedmind.Store, race: str, i: int, me: str | None, stored: dict[str, embedmind.Memory]
) -> None:
    """The ``i``-th memory holds a whole write of one writer (``me``, when only one won)."""
    if race == "supersede":
        assert me is not None
        old = store.get(f"old{i}")
        assert old is not None and old.superseded_by == memory_id(race, me, i)
        return
    memory = stored[memory_id(race, WRITERS[0], i)]
    writers = WRITERS if me is None else (me,)
    assert (memory.content, memory.namespace) in {
        (content(race, w, i), namespace(race, w)) for w in writers
    }


def _check_text_index(
    store: embedmind.Store, race: str, stored: dict[str, embedmind.Memory]
) -> None:
    """The text index holds exactly the stored contents' words, each on its own memory.

    Every word of the races is a word of its own (``race_workers.word``), so
    the index's term count is the number of distinct words stored, and a
    memory's first word finds that memory first.
    """
    everything = list(store.iter(namespace=None, include_superseded=True))
    words = {w for m in everything for w in m.content.split()}
    stats = store.stats()
    assert (stats.lexical_documents, stats.lexical_terms) == (len(everything), len(words))
    if race.startswith("upsert"):  # where one row's content was replaced under the race
        for memory in stored.values():
            first = memory.content.split()[0]
            hits = store.recall(first, k=1, namespace=NAMESPACE, mode="text")
            assert [h.memory.id for h in hits] == [memory.id], (first, memory.content)
