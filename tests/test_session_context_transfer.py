"""The session context switch of a store file: export and import carry it, a busy store refuses a change."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest

import embedmind

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
TURNS = ["where do you live now?", "in lisbon, since may"]


def _dialog(store: embedmind.Store) -> None:
    store.remember_many(
        [
            embedmind.Draft(t, session_id="s", created_at=T0 + dt.timedelta(minutes=i))
            for i, t in enumerate(TURNS)
        ]
    )


def _exported(on: bool) -> str:
    out = io.StringIO()
    with embedmind.Store.open(":memory:", embedder=None, session_context=on) as store:
        _dialog(store)
        store.export_jsonl(out)
    return out.getvalue()


@pytest.mark.parametrize("on", [True, False])
def test_the_header_names_the_setting(on: bool) -> None:
    header = json.loads(_exported(on).splitlines()[0])
    assert header["session_context"] is on


@pytest.mark.parametrize("on", [True, False])
def test_a_restore_into_a_new_store_keeps_the_setting(tmp_path: Path, on: bool) -> None:
    path = tmp_path / "restored.mind"
    with embedmind.Store.open(path, embedder=None, session_context=not on) as store:
        store.import_jsonl(io.StringIO(_exported(on)))
        assert store.stats().session_context is on
        answer = store.recall("where live", mode="text").ids
        assert len(answer) == (2 if on else 1)  # the answer turn found through its question
    with embedmind.Store.open(path, embedder=None) as store:
        assert store.stats().session_context is on


def test_a_store_with_memories_keeps_its_own_setting() -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember("bees in the garden")
        store.import_jsonl(io.StringIO(_exported(False)))
        assert store.stats().session_context
        assert len(store.recall("where live", mode="text")) == 2


def test_an_export_without_the_field_leaves_the_store_as_it_is() -> None:
    lines = _exported(False).splitlines()
    header = json.loads(lines[0])
    del header["session_context"]  # what earlier releases wrote
    older = "\n".join([json.dumps(header), *lines[1:]]) + "\n"
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.import_jsonl(io.StringIO(older))
        assert store.stats().session_context


def test_a_header_with_another_value_is_refused_and_writes_nothing() -> None:
    lines = _exported(True).splitlines()
    header = json.loads(lines[0])
    header["session_context"] = "on"
    bad = "\n".join([json.dumps(header), *lines[1:]]) + "\n"
    with embedmind.Store.open(":memory:", embedder=None, session_context=False) as store:
        with pytest.raises(embedmind.InvalidInputError, match="session_context"):
            store.import_jsonl(io.StringIO(bad))
        assert store.stats().live == 0
        assert not store.stats().session_context


def test_a_switch_while_another_writer_holds_the_lock_is_busy(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "busy.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        _dialog(store)
    with open(f"{path}-write.lock", "a") as other_writer:  # another process mid-write
        fcntl.flock(other_writer, fcntl.LOCK_EX)
        with pytest.raises(embedmind.StoreBusyError):
            embedmind.Store.open(path, embedder=None, busy_timeout=0.2, session_context=False)
        with embedmind.Store.open(path, embedder=None, busy_timeout=0.2) as store:
            assert store.stats().session_context  # None takes no lock: the setting stands
