"""Input checks of the write paths (issue 14, engine): refused calls raise a typed error and write nothing."""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind

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
