"""Chunkers return ordered spans inside the text that cover every word."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedmind.chunking import BUILT_IN, tokens
from embedmind.embedders.wordpiece import WordPiece

texts = st.lists(
    st.sampled_from(["alpha", "beta.", "gamma!", "delta?", "\n\n", "epsilon", "zeta,", "ok"]),
    max_size=80,
).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(text=texts, window=st.integers(5, 60), name=st.sampled_from(sorted(BUILT_IN)))
def test_spans_are_ordered_in_bounds_and_cover_every_word(
    text: str, window: int, name: str
) -> None:
    overlap = window // 4
    spans = BUILT_IN[name](text, window, overlap)
    starts = [s for s, _ in spans]
    assert starts == sorted(starts)
    assert all(0 <= s < e <= len(text) for s, e in spans)
    if name == "characters":  # fixed windows may cut a word, but cover every character
        covered = {i for s, e in spans for i in range(s, e)}
        assert covered == set(range(len(text))) or not text.strip()
        return
    for word in re.finditer(r"\S+", text):
        assert any(s <= word.start() and word.end() <= e for s, e in spans), (name, word.group())


def test_token_windows_fit_and_overlap() -> None:
    text = " ".join(f"word{i}" for i in range(300))
    spans = tokens(text, 40, 8)
    counter = WordPiece(max_tokens=512)
    assert all(len(counter.ids(text[s:e])) - 2 <= 40 for s, e in spans)
    assert all(b[0] < a[1] for a, b in itertools.pairwise(spans))  # consecutive overlap
    assert spans[0][0] == 0 and spans[-1][1] == len(text)


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_blank_text_has_no_spans(name: str) -> None:
    assert BUILT_IN[name]("   \n ", 10, 2) == []
