"""``Store.open(path, create=False)``: a mistyped path is an error, never a new empty store.

The PostgreSQL side (a schema no store was written to) is in
``tests/postgres/test_open_create_on_server.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import embedmind


@pytest.mark.parametrize("relative", ["typo.mind", "memories", "memories.mind-wal"])
@pytest.mark.parametrize("as_path", [False, True], ids=["str", "PathLike"])
def test_a_missing_store_is_refused_and_nothing_is_created(
    relative: str, as_path: bool, tmp_path: Path
) -> None:
    missing = tmp_path / relative
    with pytest.raises(embedmind.NotFoundError) as caught:
        embedmind.Store.open(missing if as_path else str(missing), embedder=None, create=False)
    message = str(caught.value)
    assert str(missing) in message and "create=True" in message and "fix the path" in message
    assert isinstance(caught.value, KeyError)  # the builtin NotFoundError also is
    assert list(tmp_path.iterdir()) == [], "create=False created files"


def test_a_missing_directory_is_named_and_nothing_is_created(tmp_path: Path) -> None:
    # As with create=True: the path's directory is checked before anything else.
    with pytest.raises(embedmind.InvalidInputError, match=r"directory .* does not exist"):
        embedmind.Store.open(tmp_path / "no" / "typo.mind", embedder=None, create=False)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_store_opens_as_usual(tmp_path: Path) -> None:
    path = tmp_path / "s.mind"
    with embedmind.Store.open(path, embedder="hashing") as s:
        s.remember("Alice prefers green tea", id="tea")
    before = sorted(p.name for p in tmp_path.iterdir())
    with embedmind.Store.open(path, create=False) as s:  # its recorded model, as usual
        assert s.recall("green tea", k=1).ids == ["tea"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    with embedmind.Store.open(":memory:", embedder=None, create=False) as scratch:
        assert scratch.stats().live == 0  # a throwaway always "exists"


@pytest.mark.parametrize("create", [None, 0, "no"])
def test_create_must_be_a_bool(create: object, tmp_path: Path) -> None:
    with pytest.raises(embedmind.InvalidInputError, match="create"):
        embedmind.Store.open(tmp_path / "s.mind", embedder=None, create=create)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
