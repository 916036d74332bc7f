"""A memory damaged in the file is a typed error naming it; the rest stays readable.

Damage is written through a second SQLite connection, as a flipped byte on
disk would leave it: ``CAST(x AS TEXT)`` stores bytes that are not UTF-8 as
TEXT (apsw then raised a raw ``UnicodeDecodeError``), and a changed ASCII byte
keeps valid UTF-8 that no longer matches the stored fingerprint (returned
silently before).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind import DamagedRecordError
from embedmind.drafts import fingerprint

CONTENT = "Bob keeps the spare key under the blue flowerpot"
OTHER = "Carol waters the garden every Sunday morning"


def _damage(path: Path, memory_id: str, sql_value: str, params: tuple[object, ...]) -> None:
    conn = apsw.Connection(str(path))
    conn.setbusytimeout(5000)
    conn.execute(f"UPDATE memories SET content = {sql_value} WHERE id = ?", (*params, memory_id))
    conn.close()


def _invalid_utf8(path: Path, memory_id: str) -> None:
    raw = CONTENT.encode().replace(b"blue", b"bl\xffe")
    _damage(path, memory_id, "CAST(? AS TEXT)", (raw,))


def _one_ascii_byte(path: Path, memory_id: str) -> None:
    _damage(path, memory_id, "?", (CONTENT.replace("blue", "blve"),))


DAMAGES = {"invalid-utf8": _invalid_utf8, "ascii-byte": _one_ascii_byte}


@pytest.fixture(params=sorted(DAMAGES))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[embedmind.Store]:
    path = tmp_path / "d.mind"
    with embedmind.Store.open(path, embedder=None) as store:
        store.remember(CONTENT, id="bad")
        store.remember(OTHER, id="good")
        store.remember_many([f"filler note number {i}" for i in range(300)])
    DAMAGES[request.param](path, "bad")
    with embedmind.Store.open(path, embedder=None) as store:
        yield store


def _raises_naming_bad() -> pytest.RaisesContext[DamagedRecordError]:
    return pytest.raises(DamagedRecordError, match=r"'bad'.*forget")


def test_get_names_the_damaged_memory(damaged: embedmind.Store) -> None:
    with _raises_naming_bad() as caught:
        damaged.get("bad")
    assert caught.value.ids == ("bad",)
    assert isinstance(caught.value, embedmind.StorageError)
    with _raises_naming_bad():
        damaged.get_many(["good", "bad"])


def test_reads_that_do_not_touch_it_still_work(damaged: embedmind.Store) -> None:
    assert damaged.get("good").content == OTHER  # type: ignore[union-attr]
    assert damaged.get_many(["good"])[0].content == OTHER
    assert damaged.recall("Carol waters the garden", k=1, mode="text").ids == ["good"]
    assert damaged.stats().live == 302


def test_iter_recall_and_export_refuse_to_return_it(damaged: embedmind.Store) -> None:
    with _raises_naming_bad():
        list(damaged.iter())
    with _raises_naming_bad():
        damaged.recall("spare key flowerpot", k=3, mode="text")
    with _raises_naming_bad():
        damaged.export_jsonl(io.StringIO())


@pytest.mark.parametrize("repair", ["forget", "remember", "redact"])
def test_the_repairs_the_message_names_work(damaged: embedmind.Store, repair: str) -> None:
    if repair == "forget":
        damaged.forget("bad")
        assert damaged.get("bad") is None
    elif repair == "remember":  # rewriting the original content (e.g. from a backup)
        damaged.remember(CONTENT, id="bad")
        assert damaged.get("bad").content == CONTENT  # type: ignore[union-attr]
    else:
        damaged.redact("bad", "the key was moved")
        assert damaged.get("bad").content == "the key was moved"  # type: ignore[union-attr]
    assert len(list(damaged.iter())) == 302 - (repair == "forget")
    out = io.StringIO()
    damaged.export_jsonl(out)
    assert out.getvalue().count('"type": "memory"') + out.getvalue().count(
        '"type":"memory"'
    ) == 302 - (repair == "forget")


@pytest.fixture(scope="module")
def one_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, embedmind.Store]]:
    path = tmp_path_factory.mktemp("flip") / "f.mind"
    store = embedmind.Store.open(path, embedder=None)
    store.remember(CONTENT, id="bad")
    yield path, store
    store.close()


@given(position=st.integers(0, len(CONTENT) - 1), byte=st.integers(0, 255))
def test_any_changed_byte_is_reported_or_invisible_to_the_fingerprint(
    one_store: tuple[Path, embedmind.Store], position: int, byte: int
) -> None:
    """Oracle: a read returns changed content only when its fingerprint is the original's.

    The fingerprint is the dedup hash (NFKC, case-folded, whitespace collapsed),
    so a change of case or of one blank for another is by design invisible.
    """
    path, store = one_store
    raw = bytearray(CONTENT.encode())
    raw[position] = byte
    _damage(path, "bad", "CAST(? AS TEXT)", (bytes(raw),))
    try:
        memory = store.get("bad")
    except DamagedRecordError as e:
        named = e.ids
    else:
        assert memory is not None
        assert fingerprint(memory.content) == fingerprint(CONTENT)
        return
    assert named == ("bad",)
