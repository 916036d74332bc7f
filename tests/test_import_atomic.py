"""A bad line or draft writes nothing, whatever the store's backend refuses (issue 49 §3).

An import validates the whole file before its first write, and ``remember_many``
every draft before its first batch, so a file or a list that fails leaves the
store as it was and names the line (or field) at fault. Each backend has its own
limits: PostgreSQL's text cannot hold NUL (U+0000), which SQLite stores.

The oracle is the backend itself: whatever ``remember`` (or ``link_namespaces``)
refuses alone on this backend, a file holding it after more than one batch of
good lines must refuse at that line with the same field, writing nothing; what
it accepts must import with the rest. (``tests/postgres/test_conformance_import_atomic.py``
runs this module on PostgreSQL.)
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

import embedmind
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.engine import transfer
from embedmind.errors import InvalidInputError

GOOD = 9
"""Good memories before the bad line: with batches of 4, two batches would be written first."""
BAD_LINE = GOOD + 2  # after the header and the good memories

Edit = Callable[[dict[str, Any]], None]


def _set(field: str, value: object) -> Edit:
    def edit(item: dict[str, Any]) -> None:
        item[field] = value

    return edit


BACKEND_LIMITS: dict[str, Edit] = {
    "content": _set("content", "a bad \x00 content"),
    "content, last": _set("content", "ends in NUL\x00"),
    "metadata value": _set("metadata", {"topic": "te\x00a"}),
    "metadata nested": _set("metadata", {"a": {"b": ["fine", "not\x00fine"]}}),
}
"""Fields SQLite stores NUL in and PostgreSQL cannot."""
EVERY_BACKEND: dict[str, Edit] = {
    "metadata key": _set("metadata", {"k\x00": 1}),
    "tag": _set("tags", ["ok", "t\x00"]),
    "entity": _set("entities", ["e\x00"]),
    "relation kind": _set("relations", [["k\x00", "m0", 1_700_000_000_000_000]]),
    "id": _set("id", "m\x00"),
    "namespace": _set("namespace", "n\x00s"),
    "agent": _set("agent", "a\x00"),
    "session": _set("session_id", "s\x00"),
}
"""Fields ``prepare`` refuses NUL in for every backend (the PostgreSQL run leaves them out)."""


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # Batches of 4 lines: the bad line comes after two batches an import used to commit.
    monkeypatch.setattr(transfer, "_PAGE", 4)


def _export(count: int) -> list[dict[str, Any]]:
    """An export of ``count`` good memories (ids m0, m1...), parsed line by line."""
    return [json.loads(line) for line in _exported(count).splitlines()]


@functools.cache
def _exported(count: int) -> str:
    with embedmind.Store.open(":memory:", embedder=None) as source:
        source.remember_many(
            [
                embedmind.Draft(f"good memory {i}", id=f"m{i}", metadata={"i": i})
                for i in range(count)
            ]
        )
        out = io.StringIO()
        source.export_jsonl(out)
    return out.getvalue()


def _text(lines: list[dict[str, Any]]) -> io.StringIO:
    return io.StringIO("".join(json.dumps(line) + "\n" for line in lines))


def _fields(item: dict[str, Any]) -> dict[str, Any]:
    """What ``remember`` is given for an export line's memory."""
    return dict(
        content=item["content"], id=item["id"], namespace=item["namespace"],
        metadata=item["metadata"], tags=item["tags"], agent=item["agent"],
        session_id=item["session_id"], entities=item["entities"],
        relations=[(k, t) for k, t, _ in item["relations"]],
    )  # fmt: skip


def _refusal(attempt: Callable[[embedmind.Store], object]) -> InvalidInputError | None:
    """What this backend refuses alone: ``attempt`` on a fresh, empty store."""
    with embedmind.Store.open(":memory:", embedder=None) as alone:
        try:
            attempt(alone)
        except InvalidInputError as e:
            assert alone.stats().live == 0
            return e
    return None


def _check_import(lines: list[dict[str, Any]], refused: InvalidInputError | None) -> None:
    """Import ``lines`` into an empty store: all of them, or ``refused`` at BAD_LINE and nothing."""
    memories = sum(line["type"] == "memory" for line in lines)
    with embedmind.Store.open(":memory:", embedder=None) as target:
        if refused is None:
            assert target.import_jsonl(_text(lines)) == memories
            assert target.stats().live == memories
            return
        with pytest.raises(InvalidInputError) as caught:
            target.import_jsonl(_text(lines))
        assert str(caught.value).startswith(f"line {BAD_LINE}: {refused.field}"), caught.value
        stats = target.stats()
        assert (stats.live, stats.forgotten, stats.lexical_documents) == (0, 0, 0)
        assert target.links() == []


@pytest.mark.usefixtures("small_batches")
@pytest.mark.parametrize("edit", list(BACKEND_LIMITS.values()), ids=list(BACKEND_LIMITS))
def test_a_memory_the_backend_refuses_fails_the_import_at_its_line_writing_nothing(
    edit: Edit,
) -> None:
    _import_with(edit)


@pytest.mark.usefixtures("small_batches")
@pytest.mark.parametrize("edit", list(EVERY_BACKEND.values()), ids=list(EVERY_BACKEND))
def test_a_memory_every_backend_refuses_fails_the_import_at_its_line_writing_nothing(
    edit: Edit,
) -> None:
    _import_with(edit)


def _import_with(edit: Edit) -> None:
    lines = _export(GOOD + 3)
    edit(lines[BAD_LINE - 1])
    bad = _fields(lines[BAD_LINE - 1])
    _check_import(lines, _refusal(lambda store: store.remember(**bad)))


@pytest.mark.usefixtures("small_batches")
def test_a_link_note_the_backend_refuses_fails_the_import_at_its_line_writing_nothing() -> None:
    lines = _export(GOOD)
    note = "n\x00"
    link = {"type": "link", "src": "a", "dst": "b", "tiers": None, "note": note,
            "created_at": 1_700_000_000_000_000}  # fmt: skip
    lines.insert(BAD_LINE - 1, link)
    refused = _refusal(lambda store: store.link_namespaces("a", "b", note=note))
    _check_import(lines, refused)


def test_a_refused_memory_after_a_full_batch_fails_the_import_writing_nothing() -> None:
    # The case at the real batch size: more than a batch of good lines first.
    lines = _export(transfer._PAGE + 20)
    lines.append({**lines[1], "id": "nul", "content": "x\x00y"})
    refused = _refusal(lambda store: store.remember("x\x00y", id="nul"))
    memories = len(lines) - 1
    with embedmind.Store.open(":memory:", embedder=None) as target:
        if refused is None:
            assert target.import_jsonl(_text(lines)) == memories
            return
        with pytest.raises(InvalidInputError, match=f"^line {memories + 1}: content"):
            target.import_jsonl(_text(lines))
        assert target.stats().live == 0


# Every backend's refusals too, so the nothing-written check runs on SQLite as well.
REFUSALS = {**BACKEND_LIMITS, **EVERY_BACKEND}


@pytest.mark.parametrize("edit", list(REFUSALS.values()), ids=list(REFUSALS))
def test_remember_many_writes_no_batch_when_a_later_draft_is_refused(edit: Edit) -> None:
    # remember_many promises that a bad item applies nothing at all.
    lines = _export(GOOD + 1)
    edit(lines[-1])
    drafts = [embedmind.Draft(**_fields(item)) for item in lines[1:]]
    refused = _refusal(lambda store: store.remember(**_fields(lines[-1])))
    with embedmind.Store.open(":memory:", embedder=None) as store:
        if refused is None:
            assert len(store.remember_many(drafts, batch_size=4)) == len(drafts)
            return
        with pytest.raises(InvalidInputError) as caught:
            store.remember_many(drafts, batch_size=4)
        assert caught.value.field == refused.field
        assert store.stats().live == 0


def test_notes_redactions_and_fragment_texts_are_refused_where_remember_refuses() -> None:
    # The same backend limit on every write of free text, as a typed error that changes
    # nothing (PostgreSQL used to fail these in the server: a StorageError saying to
    # check that the server is up).
    refused = _refusal(lambda store: store.remember("x\x00y")) is not None
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(8)) as store:
        store.remember("clean", id="m")
        attempts: dict[str, Callable[[], object]] = {
            "note": lambda: store.link_namespaces("a", "b", note="n\x00"),
            "content": lambda: store.redact("m", "r\x00"),
            "fragments": lambda: store.fragments.put("m", [((0, 1), "f\x00")]),
        }
        fields: dict[str, str | None] = {}
        for name, attempt in attempts.items():
            try:
                attempt()
                fields[name] = None
            except InvalidInputError as e:
                fields[name] = e.field
        memory = store.get("m")
        assert memory is not None
        notes = [link.note for link in store.links()]
        if not refused:  # all of them stored
            assert fields == dict.fromkeys(attempts)
            assert (memory.content, notes, store.fragments.fragment_count) == (
                "r\x00",
                ["n\x00"],
                1,
            )
            return
        assert fields == {name: name for name in attempts}
        assert (memory.content, notes, store.fragments.fragment_count) == ("clean", [], 0)
