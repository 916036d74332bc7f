"""Chunkers: split a text into ``[start, end)`` character spans.

Each chunker takes the text, a window and an overlap (in characters) and
returns spans that cover every non-blank part of the text, in order. They are
registered by name through the ``register_chunkers`` hook; these built-ins
come from :mod:`embedmind.default_plugins.chunkers`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

Span = tuple[int, int]
Chunker = Callable[[str, int, int], list[Span]]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_PARAGRAPH = re.compile(r"\n\s*\n")
_WORD = re.compile(r"\S+")


def characters(text: str, window: int, overlap: int) -> list[Span]:
    """Fixed windows of ``window`` characters sharing ``overlap`` characters."""
    if not text.strip():
        return []
    step = max(1, window - overlap)
    spans = []
    start = 0
    while start < len(text):
        end = min(start + window, len(text))
        spans.append((start, end))
        if end == len(text):
            break
        start += step
    return spans


def words(text: str, window: int, overlap: int) -> list[Span]:
    """Windows of ``window`` words sharing ``overlap`` words (a span per word when window is 1)."""
    found = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    step = max(1, window - overlap)
    return [
        (found[i][0], found[min(i + window, len(found)) - 1][1])
        for i in range(0, len(found), step)
        if i == 0 or i + overlap < len(found)
    ]


def _pack(pieces: list[Span], window: int) -> list[Span]:
    """Merge consecutive pieces into spans of at most ``window`` characters."""
    spans: list[Span] = []
    for start, end in pieces:
        if spans and end - spans[-1][0] <= window:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _split(text: str, pattern: re.Pattern[str]) -> list[Span]:
    pieces, start = [], 0
    for match in pattern.finditer(text):
        if text[start : match.start()].strip():
            pieces.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        pieces.append((start, len(text)))
    return pieces


def sentences(text: str, window: int, overlap: int) -> list[Span]:
    """Whole sentences packed into spans of at most ``window`` characters."""
    del overlap  # sentences never overlap
    return _pack(_split(text, _SENTENCE_END), window)


def paragraphs(text: str, window: int, overlap: int) -> list[Span]:
    """Whole paragraphs packed into spans of at most ``window`` characters."""
    del overlap
    return _pack(_split(text, _PARAGRAPH), window)


@functools.lru_cache(maxsize=8)
def _wordpiece(max_tokens: int) -> Any:
    from embedmind.embedders.wordpiece import WordPiece

    return WordPiece(max_tokens=max_tokens)


def tokens(text: str, window: int, overlap: int) -> list[Span]:
    """Windows of ``window`` WordPiece tokens (the default model's tokenizer) sharing ``overlap``.

    Edges fall between words, so re-tokenizing a span gives the same tokens.
    """
    if not text.strip():
        return []
    spans: list[Span] = _wordpiece(window + 2).spans(text, overlap_tokens=overlap)
    return spans


BUILT_IN: dict[str, Chunker] = {
    "tokens": tokens,
    "characters": characters,
    "words": words,
    "sentences": sentences,
    "paragraphs": paragraphs,
}
