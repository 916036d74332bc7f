"""``drafts.memories_of`` fills each Memory's fields at once: the same memories as ``Memory(...)``.

Oracle: the memories a store reads back (``Store.get`` builds each with
``Memory(...)``), and ``Memory(**fields)`` of the very fields filled in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind.drafts import memories_of, prepare
from embedmind.model import Draft, Memory
from embedmind.timestamps import resolve_now

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


def test_a_memory_can_be_filled_in_as_its_init_would_set_it() -> None:
    assert not hasattr(Memory, "__post_init__")
    assert not hasattr(Memory, "__slots__")


@given(
    st.lists(
        st.builds(
            Draft,
            st.text("abc xyz", min_size=1).filter(str.strip),
            metadata=st.dictionaries(
                st.sampled_from("kq"), st.integers(-(2**63), 2**63 - 1) | st.text("ab")
            ),
            tags=st.lists(st.sampled_from(["x", "y"]), unique=True),
            session_id=st.none() | st.just("s1"),
            confidence=st.floats(0, 1),
            ttl=st.none() | st.just(dt.timedelta(days=3)),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_each_memory_equals_the_one_read_back(drafts: list[Draft]) -> None:
    drafts = [dataclasses.replace(d, id=f"m{i}") for i, d in enumerate(drafts)]
    made = memories_of([prepare(d, resolve_now(NOW)) for d in drafts])
    for memory in made:
        fields = {f.name: getattr(memory, f.name) for f in dataclasses.fields(Memory)}
        assert memory == Memory(**fields)
        assert vars(memory) == fields
    with embedmind.Store.open(":memory:", embedder=None) as store:
        stored = store.remember_many(drafts, now=NOW)
        assert stored == made
        assert [store.get(d.id) for d in drafts] == made
