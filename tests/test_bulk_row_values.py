"""A batch's memory rows hold exactly the values validation produced.

``remember_many`` inserts a batch's rows as one JSON array per statement
(``records.insert_many``). Oracle: ``records._values`` of each draft's
:func:`~embedmind.drafts.prepare`, the values the row would be bound with
one by one. Every column must come back equal and of the same type: text
with NUL and control characters, integers near the 64-bit limits, reals of
every magnitude (a real parsed one ulp off, or an integer column turned into
a real, fails). Tiny chunks split a batch over several statements, whose keys
must still name the right rows. A column every row of a statement shares
is bound once instead: each field is shared by the whole batch in some
examples, so both ways carry every kind of value.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind.backend.sqlite import records
from embedmind.drafts import prepare
from embedmind.model import Draft
from embedmind.timestamps import resolve_now

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
T0 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)

plain = st.characters(exclude_categories=("Cs",))  # no lone surrogates: validation refuses them
contents = st.text(plain, min_size=1, max_size=40).filter(lambda t: not t.isspace())
names = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=6)
values = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(plain, max_size=10)
)


@st.composite
def drafts(draw: st.DrawFn) -> list[Draft]:
    out = []
    for i in range(draw(st.integers(1, 30))):
        out.append(
            Draft(
                draw(contents),
                id=f"m{i}",
                metadata=draw(st.dictionaries(names, values, max_size=3)),
                tags=draw(st.lists(names.filter(bool), max_size=2, unique=True)),
                confidence=draw(st.floats(0, 1)),
                created_at=T0 + dt.timedelta(microseconds=draw(st.integers(0, 10**15))),
                session_id=draw(st.none() | names.filter(bool)),
                agent=draw(st.sampled_from(["", "planner"])),
            )
        )
    shared = draw(st.sets(st.sampled_from(_SHAREABLE)))
    first = {name: getattr(out[0], name) for name in shared}
    return [dataclasses.replace(draft, **first) for draft in out]


_SHAREABLE = ("content", "metadata", "tags", "confidence", "created_at", "session_id", "agent")
"""Draft fields a batch may hold the same value of in every draft (ids stay distinct)."""


@given(drafts(), st.sampled_from([1, 25, records.JSON_CHUNK_CHARS]))
def test_each_row_of_a_batch_holds_the_values_validation_produced(
    batch: list[Draft], chunk_chars: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records, "JSON_CHUNK_CHARS", chunk_chars)
        with embedmind.Store.open(":memory:", embedder=None) as store:
            store.remember_many(batch, now=NOW)
            with store._db.read() as conn:
                rows = {
                    row[0]: tuple(row)
                    for row in conn.execute(f"SELECT {records._WRITE_COLUMNS} FROM memories")
                }
                tags = sorted(tuple(r) for r in conn.execute(
                    "SELECT m.id, t.tag FROM memory_tags t JOIN memories m USING (key)"
                ))  # fmt: skip
    at = resolve_now(NOW)
    for draft in batch:
        expected = records._values(prepare(draft, at))
        assert rows[draft.id] == expected
        assert [type(v) for v in rows[draft.id]] == [type(v) for v in expected]
    assert tags == sorted((d.id, tag) for d in batch for tag in d.tags)


def test_a_column_is_bound_once_only_when_every_row_holds_its_first_value_and_type() -> None:
    assert records._shared(("default",) * 3)
    assert records._shared((None, None))
    assert not records._shared(("a", "a", "b"))
    assert not records._shared((None, 0))
    # Python's 1 == 1.0 == True; SQLite stores them as an integer, a real and an integer.
    assert not records._shared((1, 1.0))
    assert not records._shared((1, True))
