"""The bert-base-uncased WordPiece tokenizer, shipped as package data, and token windows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from embedmind.embedders.protocol import Span

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["MODEL_DIR", "WordPiece"]

#: Package data of the default model (tokenizer, configs, licence notice).
MODEL_DIR = Path(__file__).resolve().parents[1] / "data" / "models" / "all-MiniLM-L6-v2"
# A first guess of how many characters hold a full window; most WordPiece
# tokens are 3-6 characters. Longer texts are tokenized a prefix at a time.
_CHARS_PER_TOKEN_GUESS = 8


class WordPiece:
    """Tokenize for a BERT window of ``max_tokens`` (including ``[CLS]``/``[SEP]``).

    Args:
        max_tokens: The model window.

    Raises:
        RuntimeError: When the ``tokenizers`` package or the tokenizer file is missing.
    """

    def __init__(self, max_tokens: int = 256) -> None:
        self.max_tokens = max_tokens
        self._tok = _load(max_tokens)
        self._bare = _load(None)

    def ids(self, text: str) -> npt.NDArray[np.int64]:
        """Return the model input ids of ``text``, truncated to the window.

        Only a prefix long enough to fill the window is tokenized, so a huge
        text costs no more than a window's worth of work and memory.

        Args:
            text: The text.

        Returns:
            ``[CLS] ... [SEP]`` ids, at most ``max_tokens`` long.
        """
        limit = self.max_tokens * _CHARS_PER_TOKEN_GUESS
        while len(text) > limit:
            # Cut at whitespace so no word is split; the prefix is exact when
            # it already yields more tokens than the window holds.
            cut = text.rfind(" ", 0, limit)
            if cut <= 0:
                break
            encoding = self._tok.encode(text[:cut])
            if encoding.overflowing:
                return np.asarray(encoding.ids, dtype=np.int64)
            limit *= 4
        return np.asarray(self._tok.encode(text).ids, dtype=np.int64)

    def spans(self, text: str, overlap_tokens: int = 32) -> list[Span]:
        """Split ``text`` into overlapping windows that each fit the model.

        Window edges fall on word starts and ends (never inside a word's
        WordPiece continuation), so tokenizing ``text[start:end]`` again
        yields the same tokens, at most ``max_tokens`` with specials.

        Args:
            text: The text.
            overlap_tokens: Tokens shared by consecutive windows, at most
                half a window (larger values are clamped).

        Returns:
            Half-open character spans; the first starts at 0, the last ends
            at ``len(text)``, consecutive spans overlap. ``[(0, len(text))]``
            when the text fits one window (``[(0, 0)]`` for ``""``).

        Raises:
            ValueError: When ``overlap_tokens`` is negative.
        """
        if overlap_tokens < 0:
            raise ValueError("overlap_tokens must be >= 0")
        room = self.max_tokens - 2
        overlap_tokens = min(overlap_tokens, room // 2)
        encoding = self._bare.encode(text, add_special_tokens=False)
        offsets, pieces = encoding.offsets, encoding.tokens
        if len(offsets) <= room:
            return [(0, len(text))]
        starts = [i == 0 or not pieces[i].startswith("##") for i in range(len(pieces))]
        out: list[Span] = []
        begin = 0
        while True:
            end = _word_end(starts, begin, min(begin + room, len(pieces)))
            first = 0 if begin == 0 else offsets[begin][0]
            last = len(text) if end == len(pieces) else offsets[end - 1][1]
            out.append((first, last))
            if end == len(pieces):
                return out
            begin = _word_start(starts, max(end - overlap_tokens, begin + 1), end)


def _word_end(starts: list[bool], begin: int, end: int) -> int:
    """Move ``end`` back so the window does not stop inside a word."""
    cut = end
    while cut < len(starts) and cut > begin + 1 and not starts[cut]:
        cut -= 1
    # A single word longer than the window: cut inside it rather than stall.
    return cut if cut > begin + 1 or cut == len(starts) else end


def _word_start(starts: list[bool], begin: int, end: int) -> int:
    """Move ``begin`` forward to the next word start before ``end``."""
    cut = begin
    while cut < end and not starts[cut]:
        cut += 1
    return cut if cut < end else begin


def _load(max_tokens: int | None) -> Tokenizer:
    """Load the shipped tokenizer with padding off and truncation at ``max_tokens``."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise RuntimeError("the default embedder needs the 'tokenizers' package") from exc
    path = MODEL_DIR / "tokenizer.json"
    if not path.is_file():
        raise RuntimeError(f"tokenizer file missing from the package: {path}")
    tok = Tokenizer.from_file(str(path))
    # The file pins padding and truncation at 128; we pad ourselves (never:
    # one text per call) and truncate at the model's 256-token window.
    tok.no_padding()
    if max_tokens is None:
        tok.no_truncation()
    else:
        tok.enable_truncation(max_length=max_tokens)
    return tok
