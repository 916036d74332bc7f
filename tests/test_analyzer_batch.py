"""``analyze_many`` (a bulk write's analysis) against ``analyze`` of each text alone.

Oracle: :func:`embedmind.lexical.analyzer.analyze`, one text at a time. The
batch joins its texts before normalising and folding them, so any text
where that join leaks across a boundary (a combining mark, a ligature, a
fold that expands) must still come out as it does alone.
"""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from embedmind.lexical.aliases import Table, fields, fields_many
from embedmind.lexical.analyzer import analyze, analyze_many

# Characters whose normalisation or folding depends on their neighbours or
# changes their length: combining marks, Hangul jamo, ligatures, ß, the
# Kelvin sign, fullwidth forms, a stop word, the separator itself.
_TRICKY = "\u0301\u0327\u1100\u1161\u11a8\ufb01ßK\uff21é e\u0301 The\x00-_1"
_texts = st.lists(
    st.one_of(st.text(max_size=40), st.text(alphabet=_TRICKY + "abc XYZ", max_size=40)),
    max_size=12,
)

# ASCII batches take the path without the regex: every byte class it maps
# (punctuation, control characters, underscore, digits), stop words and
# words around the length limit.
_ASCII = string.printable + "\x01\x1c\x1f\x7f_"
_ascii_texts = st.lists(
    st.one_of(
        st.text(alphabet=_ASCII, max_size=60),
        st.lists(
            st.sampled_from(["The", "don't", "x" * 64, "y" * 65, "a_b", "42", "it's", "RUNNING"]),
            max_size=8,
        ).map(" ".join),
    ),
    max_size=12,
)


@settings(max_examples=400)
@given(_texts)
def test_a_batch_analyses_each_text_as_it_would_alone(texts: list[str]) -> None:
    assert analyze_many(texts) == [analyze(text) for text in texts]


@settings(max_examples=400)
@given(_ascii_texts)
def test_an_ascii_batch_analyses_each_text_as_it_would_alone(texts: list[str]) -> None:
    assert analyze_many(texts) == [analyze(text) for text in texts]


def test_an_ascii_batch_keeps_underscores_and_digits_and_drops_long_words() -> None:
    texts = ["snake_case v2 don't", "x" * 65 + " cats", "tab\tsep\x1fnext"]
    assert analyze_many(texts) == [analyze(text) for text in texts]
    assert analyze_many(texts) == [["snake_cas", "v2", "don"], ["cat"], ["tab", "sep", "next"]]


def test_boundaries_never_join_two_texts_words() -> None:
    texts = ["caf", "\u0301s running", "", "Ｎｙｃ", "end"]
    assert analyze_many(texts) == [analyze(text) for text in texts]
    assert analyze_many(["running dogs", "the cats"]) == [["run", "dog"], ["cat"]]


def test_a_text_holding_the_separator_is_analysed_alone() -> None:
    texts = ["a\x00b cats", "dogs"]
    assert analyze_many(texts) == [analyze(text) for text in texts]


def test_fields_of_a_batch_equal_fields_of_each_text() -> None:
    table = Table.compile([("nyc", "new york"), ("big apple", "new york city")])
    texts = ["I love NYC", "the Big Apple at night", "nothing here", "nyc nyc"]
    assert fields_many(texts, table) == [fields(text, table) for text in texts]
