"""Input checks of the write paths (issue 14, engine): refused calls raise a typed error and write nothing."""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import where_listing

import embedmind
from embedmind.cli.main import EXIT_INVALID
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.policies import EvictionPolicy, FragmentPolicy
from embedmind.query import where as filters

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


def snapshot(store: embedmind.Store) -> list[dict[str, Any]]:
    """Everything a caller can see of the store, forgotten memories included."""
    return [
        json.loads(json.dumps(m.__dict__, default=str)) for m in store.iter(include_forgotten=True)
    ]


# --- supersede with an earlier instant ---------------------------------------------------------


@given(offset=st.integers(min_value=-(10**9), max_value=10**9))
def test_supersede_window_is_refused_unless_the_new_version_starts_later(offset: int) -> None:
    """Oracle: superseding succeeds exactly when the new start is after the old one's."""
    with embedmind.Store.open(":memory:", embedder=None) as store:
        old = store.remember("the office is on floor 3", id="old", now=T0)
        at = T0 + dt.timedelta(microseconds=offset)
        before = snapshot(store)
        if offset > 0:
            store.remember("the office is on floor 5", id="new", supersedes=["old"], now=at)
            kept = store.get("old")
            assert kept is not None and kept.valid_to is not None
            assert kept.valid_from < kept.valid_to
            return
        with pytest.raises(embedmind.InvalidInputError) as info:
            store.remember("the office is on floor 5", id="new", supersedes=["old"], now=at)
        assert info.value.field == "supersedes"
        assert old.valid_from.isoformat() in str(info.value)
        assert at.isoformat() in str(info.value)
        assert snapshot(store) == before


def test_supersede_by_valid_from_before_the_old_start_is_refused(
    store: embedmind.Store,
) -> None:
    store.remember("v1", id="v1", now=T0, valid_from=T0 + dt.timedelta(days=5))
    before = snapshot(store)
    with pytest.raises(embedmind.InvalidInputError, match="valid from"):
        store.remember_many(
            [embedmind.Draft("v2", id="v2", supersedes=["v1"], valid_from=T0)],
            now=T0 + dt.timedelta(days=6),
        )
    assert snapshot(store) == before


# --- an id taken in another namespace ----------------------------------------------------------

SECRET = "tenant-7f3/secret-project"


def _assert_hidden(error: embedmind.ConflictError) -> None:
    assert error.id == "shared-id"
    assert "shared-id" in str(error) and "another namespace" in str(error)
    exposed = [str(error), repr(error), *map(repr, vars(error).values()), *map(repr, error.args)]
    assert not any(SECRET in text for text in exposed)


BATCHES = {
    "alone": [embedmind.Draft("mine", id="shared-id", namespace="tenant-a")],
    "after_a_new_id": [
        embedmind.Draft("fresh", namespace="tenant-a"),
        {"content": "x", "id": "shared-id"},
    ],
    # The writes before the conflict, an upsert among them, roll back with it.
    "one_by_one": [
        embedmind.Draft("first", id="mine", namespace="tenant-a"),
        embedmind.Draft("second", id="mine", namespace="tenant-a"),
        embedmind.Draft("third", id="shared-id", namespace="tenant-a"),
    ],
}


@pytest.mark.parametrize("batch", BATCHES.values(), ids=BATCHES.keys())
def test_conflict_does_not_name_the_other_namespace(
    store: embedmind.Store, batch: list[Any]
) -> None:
    store.remember("secret plans", id="shared-id", namespace=SECRET)
    before = snapshot(store)
    with pytest.raises(embedmind.ConflictError) as info:
        store.remember_many(batch)
    _assert_hidden(info.value)
    assert snapshot(store) == before


def test_remember_conflict_does_not_name_the_other_namespace(store: embedmind.Store) -> None:
    store.remember("secret plans", id="shared-id", namespace=SECRET)
    with pytest.raises(embedmind.ConflictError) as info:
        store.remember("mine", id="shared-id", namespace="tenant-a")
    _assert_hidden(info.value)


def test_supersede_across_namespaces_does_not_name_the_other_namespace(
    store: embedmind.Store,
) -> None:
    store.remember("secret plans", id="theirs", namespace=SECRET)
    before = snapshot(store)
    with pytest.raises(embedmind.InvalidInputError) as info:
        store.remember("my version", namespace="tenant-a", supersedes=["theirs"])
    error = info.value
    assert "theirs" in str(error) and "another namespace" in str(error)
    exposed = [str(error), repr(error), *map(repr, vars(error).values()), *map(repr, error.args)]
    assert not any(SECRET in text for text in exposed)
    assert snapshot(store) == before


def test_import_conflict_does_not_name_the_other_namespace(store: embedmind.Store) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as source:
        source.remember("mine", id="shared-id", namespace="tenant-a")
        out = io.StringIO()
        source.export_jsonl(out)
    store.remember("secret plans", id="shared-id", namespace=SECRET)
    before = snapshot(store)
    with pytest.raises(embedmind.ConflictError, match="line 2") as info:
        store.import_jsonl(io.StringIO(out.getvalue()))
    _assert_hidden(info.value)
    assert snapshot(store) == before


# --- empty or whitespace-only content ----------------------------------------------------------

WHITESPACE = "".join(c for c in map(chr, range(0x110000)) if c.isspace())
blank = st.text(alphabet=WHITESPACE, max_size=8)
"""Every text ``str.strip`` reduces to nothing: the empty string and Unicode whitespace."""


def _assert_blank_refused(info: pytest.ExceptionInfo[embedmind.InvalidInputError]) -> None:
    assert info.value.field.endswith("content")
    assert "empty or only whitespace" in str(info.value)


# Without NUL: whether a text may hold it is the backend's matter, not blankness (SQLite
# stores it; PostgreSQL refuses it with its own error, tests/postgres/test_transfer.py).
# Without lone surrogates (category Cs): they are refused as unencodable first, with
# their own error (tests/security/test_bad_input.py), whatever else the text holds.
unblank = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=8)


@given(text=st.one_of(blank, unblank))
def test_remember_refuses_exactly_the_blank_texts(text: str) -> None:
    """Oracle: a text is refused for blankness exactly when ``text.strip()`` is empty."""
    with embedmind.Store.open(":memory:", embedder=None) as store:
        if text.strip():
            assert store.remember(text).content == text
            return
        with pytest.raises(embedmind.InvalidInputError) as info:
            store.remember(text)
        _assert_blank_refused(info)
        assert snapshot(store) == []


@pytest.mark.parametrize("item", ["", " \t\n", embedmind.Draft("\u3000"), {"content": "\u2028 "}])
def test_remember_many_refuses_blank_content_and_writes_nothing(
    store: embedmind.Store, item: Any
) -> None:
    store.remember("kept", id="kept")
    before = snapshot(store)
    with pytest.raises(embedmind.InvalidInputError) as info:
        store.remember_many(["a fine memory", item])
    _assert_blank_refused(info)
    assert snapshot(store) == before


def test_remember_detailed_and_supersede_refuse_blank_content(store: embedmind.Store) -> None:
    store.remember("the office is on floor 3", id="old", now=T0)
    before = snapshot(store)
    with pytest.raises(embedmind.InvalidInputError) as info:
        store.remember_detailed("  ")
    _assert_blank_refused(info)
    with pytest.raises(embedmind.InvalidInputError) as info:
        store.remember(" ", supersedes=["old"], now=T0 + dt.timedelta(days=1))
    _assert_blank_refused(info)
    assert snapshot(store) == before


def test_redact_to_blank_is_refused_with_a_placeholder_suggested(store: embedmind.Store) -> None:
    store.remember("my password is hunter2", id="secret")
    before = snapshot(store)
    with pytest.raises(embedmind.InvalidInputError, match=r"\[redacted\]") as info:
        store.redact("secret", "")
    _assert_blank_refused(info)
    assert snapshot(store) == before
    assert store.redact("secret", "[redacted]").content == "[redacted]"


def test_import_refuses_a_blank_line_content_and_writes_nothing(store: embedmind.Store) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as source:
        source.remember("first", id="a")
        source.remember("second", id="b")
        out = io.StringIO()
        source.export_jsonl(out)
    lines = out.getvalue().splitlines()
    damaged = json.loads(lines[2])
    damaged["content"] = " \n "
    lines[2] = json.dumps(damaged)
    with pytest.raises(embedmind.InvalidInputError) as info:
        store.import_jsonl(io.StringIO("\n".join(lines) + "\n"))
    assert info.value.field == "line 3: content"
    _assert_blank_refused(info)
    assert snapshot(store) == []


EXE = str(Path(sys.executable).with_name("embedmind"))


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_cli_remember_blank_exits_with_the_invalid_input_code(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cli.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder()) as store:
        store.remember("kept", id="kept")
        before = snapshot(store)
    done = subprocess.run(
        [EXE, "--store", str(path), "--embedder", "hashing", "remember", text],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_INVALID, done.stderr
    assert "empty or only whitespace" in done.stderr and done.stdout == ""
    with embedmind.Store.open(path, embedder=HashingEmbedder()) as store:
        assert snapshot(store) == before


@pytest.mark.timeout(120)
def test_mcp_remember_blank_is_a_tool_error(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the optional mcp extra is not installed")
    from test_mcp import _call, _run  # the SDK's own stdio client, as the MCP tests drive it

    path = tmp_path / "agent.mind"

    async def body(session: Any) -> list[tuple[bool, Any]]:
        return [await _call(session, "remember", content=text) for text in ("", " \n ")]

    for error, text in _run(path, body):
        assert error and "InvalidInputError" in text and "empty or only whitespace" in text
    with embedmind.Store.open(path, embedder=HashingEmbedder()) as store:
        assert snapshot(store) == []


# --- policies scoped by a namespace spelled in another normal form -----------------------------

ROOT = "caf\u00e9/\u00c5ngstr\u00f6m"
"""A namespace with composable letters; ``\u212b`` (ANGSTROM SIGN) is one more spelling of Å."""
SPELLINGS = {
    "nfc": ROOT,
    "nfd": unicodedata.normalize("NFD", ROOT),
    "angstrom_sign": ROOT.replace("\u00c5", "\u212b"),
}


@pytest.mark.parametrize("pattern", ["{}", "{}/*"], ids=["exact", "subtree"])
@pytest.mark.parametrize("written", SPELLINGS.values(), ids=SPELLINGS.keys())
@pytest.mark.parametrize("given", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_fragment_policy_applies_whatever_the_namespace_spelling(
    given: str, written: str, pattern: str
) -> None:
    policy = FragmentPolicy(chunker="words", window=1, namespaces=[pattern.format(given)])
    assert policy.namespaces == (pattern.format(ROOT),)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(), fragment_policy=policy) as s:
        s.remember("cat dog", id="in", namespace=written)
        s.remember("cat dog", id="out", namespace="elsewhere")
        assert s.fragments.record_count == 1
        assert {h.record_id for h in s.fragments.query("cat", k=5)} == {"in"}


@pytest.mark.parametrize("given", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_eviction_policy_applies_whatever_the_namespace_spelling(given: str) -> None:
    policy = EvictionPolicy(max_records=1, namespaces=given)
    assert policy.namespaces == ROOT
    with embedmind.Store.open(":memory:", embedder=None, eviction=policy) as store:
        store.remember("first", id="first", namespace=ROOT, now=T0)
        store.remember("second", id="second", namespace=ROOT, now=T0 + dt.timedelta(seconds=1))
        assert [m.id for m in store.iter()] == ["second"]


@pytest.mark.parametrize("namespaces", [[], "", "a//b", ["ok", "a/../b"], 5, ["x\x00"]])
def test_policy_with_an_invalid_namespace_scope_is_refused_at_construction(
    namespaces: Any,
) -> None:
    for make in (
        lambda: FragmentPolicy(namespaces=namespaces),
        lambda: EvictionPolicy(max_records=1, namespaces=namespaces),
    ):
        with pytest.raises(embedmind.InvalidInputError) as info:
            make()
        assert info.value.field == "namespaces"


# --- where filters past SQLite's limits --------------------------------------------------------

LIMIT = filters.MAX_CONDITIONS
ROWS = {"r0": {"a": 0, "t": [0, 1]}, "r1": {"a": 7, "t": [7]}, "r2": {"a": "x"}}
# Conditions per leaf, as MAX_CONDITIONS documents them: one per key test, one per $all
# value, one for the type check of a comparison or list operator; a $in list is one.
SHAPES: dict[str, tuple[int, Any]] = {
    "eq": (1, lambda i: {"a": i}),
    "in": (1, lambda i: {"a": {"$in": [i, i + 1, i + 2]}}),
    "gte": (2, lambda i: {"a": {"$gte": i}}),
    "all": (4, lambda i: {"t": {"$all": [i, i + 1]}}),
}


def _listing(store: embedmind.Store, where: dict[str, Any], how: str) -> set[str]:
    if how == "iter":
        return {m.id for m in store.iter(where=where)}
    return set(store.recall("apple", mode=how, k=10, where=where).ids)


@pytest.fixture(scope="module")
def rows() -> Any:
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder()) as store:
        for memory_id, metadata in ROWS.items():
            store.remember("apple orchard", id=memory_id, metadata=metadata)
        yield store


@settings(max_examples=12, deadline=None)
@given(
    shape=st.sampled_from(sorted(SHAPES)),
    extra=st.integers(min_value=-2, max_value=2),
    joiner=st.sampled_from(["$or", "$and"]),
    wrappers=st.lists(st.sampled_from(["$not", "$and", "$or"]), max_size=filters.MAX_DEPTH - 1),
    how=st.sampled_from(["iter", "text", "vector", "hybrid"]),
)
def test_a_filter_up_to_the_condition_limit_runs_and_one_past_is_refused(
    rows: embedmind.Store, shape: str, extra: int, joiner: str, wrappers: list[str], how: str
) -> None:
    """Oracle: runs (matching tests/oracles.py) iff it has at most MAX_CONDITIONS conditions."""
    cost, leaf = SHAPES[shape]
    branches = LIMIT // cost + extra
    where: dict[str, Any] = {joiner: [leaf(i) for i in range(branches)]}
    for wrapper in wrappers:  # nesting adds SQL depth but no condition
        where = {wrapper: where} if wrapper == "$not" else {wrapper: [where]}
    if branches * cost > LIMIT:
        with pytest.raises(embedmind.InvalidFilterError, match=f"more than {LIMIT}"):
            _listing(rows, where, how)
        return
    expected = where_listing(where, ROWS)
    if expected is None:
        with pytest.raises(embedmind.FilterTypeError):
            _listing(rows, where, how)
    else:
        assert _listing(rows, where, how) == expected


def test_the_issue_5000_way_or_is_a_filter_error_naming_the_limit(rows: embedmind.Store) -> None:
    with pytest.raises(embedmind.InvalidFilterError, match=r"\$in") as info:
        _listing(rows, {"$or": [{"a": i} for i in range(5_000)]}, "text")
    assert f"more than {LIMIT}" in str(info.value)
    # What the message suggests: one $in, whatever its length.
    assert _listing(rows, {"a": {"$in": list(range(5_000))}}, "text") == {"r0", "r1"}


def test_many_keys_in_one_object_and_long_lists_are_bounded(rows: embedmind.Store) -> None:
    assert _listing(rows, {f"k{i}": {"$exists": False} for i in range(LIMIT)}, "iter") == set(ROWS)
    with pytest.raises(embedmind.InvalidFilterError, match=f"more than {LIMIT} conditions"):
        _listing(rows, {f"k{i}": {"$exists": False} for i in range(LIMIT + 1)}, "iter")
    # Empty branches are no condition; a list longer than MAX_BRANCHES is refused before compiling.
    assert _listing(rows, {"$or": [{}] * filters.MAX_BRANCHES}, "iter") == set(ROWS)
    with pytest.raises(embedmind.InvalidFilterError, match=f"more than {filters.MAX_BRANCHES}"):
        _listing(rows, {"$or": [{}] * (filters.MAX_BRANCHES + 1)}, "iter")
    # The documented $all limit still fits: 1,000 values, its key test and its type check.
    assert _listing(rows, {"t": {"$all": [0] * filters.MAX_ALL_VALUES}}, "iter") == {"r0"}
