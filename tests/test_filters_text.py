"""The string and emptiness operators: $match, $imatch, $empty (checked against Python)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embedmind

VALUES = st.one_of(
    st.none(),
    st.text(alphabet="aAbBéÉ ", max_size=6),
    st.integers(-3, 3),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["x"]), st.integers(0, 1), max_size=1),
)


def _expected(op: str, arg: Any, present: bool, value: Any) -> bool:
    if op == "$empty":
        empty = not present or value is None or value == "" or value == []
        return empty if arg else not empty
    if not present or not isinstance(value, str):
        return False
    return arg in value if op == "$match" else arg.casefold() in value.casefold()


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.tuples(st.booleans(), VALUES), min_size=1, max_size=12),
    op=st.sampled_from(["$match", "$imatch", "$empty"]),
    text=st.text(alphabet="aAbBéÉ ", max_size=3),
    flag=st.booleans(),
)
def test_text_and_empty_operators_match_python(
    values: list[tuple[bool, Any]], op: str, text: str, flag: bool
) -> None:
    arg: Any = flag if op == "$empty" else text
    with embedmind.Store.open(":memory:", embedder=None) as store:
        for i, (present, value) in enumerate(values):
            store.remember("m", id=str(i), metadata={"t": value} if present else {})
        got = {m.id for m in store.iter(where={"t": {op: arg}})}
    expected = {
        str(i) for i, (present, value) in enumerate(values) if _expected(op, arg, present, value)
    }
    assert got == expected


@pytest.mark.parametrize(
    "bad", [{"t": {"$match": 3}}, {"t": {"$imatch": None}}, {"t": {"$empty": "yes"}}]
)
def test_bad_operands_are_rejected(bad: dict[str, Any]) -> None:
    with (
        embedmind.Store.open(":memory:", embedder=None) as store,
        pytest.raises(embedmind.InvalidFilterError),
    ):
        list(store.iter(where=bad))
