"""The content fingerprint: its ASCII shortcut hashes what the general normalisation does.

Stored fingerprints are compared with new ones (exact dedup, ``find_by_fingerprint``,
integrity checks), so the shortcut must never change a hash: it is checked against
the general path on text built to sit at its edges (control characters, runs and
ends of whitespace, case, non-ASCII look-alikes), and against hashes the general
path gave before the shortcut existed.
"""

from __future__ import annotations

import hashlib
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from embedmind import drafts


def _reference(content: str) -> str:
    normal = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:32]


_EDGES = st.sampled_from(
    [" ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x00", "\xa0",
     "\u2003", "ß", "ﬁ", "Ａ", "İ", "K", "a", "Z", "0", "."]
)  # fmt: skip


@given(st.lists(st.one_of(st.text(st.characters(max_codepoint=0x7F)), _EDGES), max_size=12))
@example(["green tea "])
@example([" green tea"])
@example(["green  tea"])
@example(["green\ttea"])
@example(["green\x1ftea"])
@example(["Green Tea"])
def test_the_shortcut_hashes_as_the_general_normalisation(parts: list[str]) -> None:
    content = "".join(parts)
    assert drafts.fingerprint(content) == _reference(content)


@given(st.text())
def test_any_text_hashes_as_the_general_normalisation(content: str) -> None:
    assert drafts.fingerprint(content) == _reference(content)


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        # Hashes computed by the general path alone (before the ASCII shortcut).
        ("Alice prefers green tea", "1c0b29b66ac94fca362e236bf1a9a020"),
        ("  ALICE   prefers\tgreen tea\n", "1c0b29b66ac94fca362e236bf1a9a020"),
        ("Straße ﬁle", "644302e735db150d7ea398ad56a55bd2"),
    ],
)
def test_fingerprints_stay_the_ones_already_stored(content: str, stored: str) -> None:
    assert drafts.fingerprint(content) == stored
