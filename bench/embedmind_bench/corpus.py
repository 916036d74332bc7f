"""Seeded synthetic chat turns and questions for the lexical benchmarks.

Documents are short chat turns (about 24 words) mixing Zipf-distributed
function words and content words, with a sprinkle of one-off tokens (codes,
nicknames, typos) so the term dictionary keeps growing with the corpus the
way Heaps' law says real text does. Documents are made in fixed chunks, each
from its own seeded stream, so the first ``n`` documents are the same
whatever ``n`` is (the 100k corpus is a prefix of the 1M one) and a million
of them stream through a few megabytes of memory.

Example:
    >>> spec = CorpusSpec(seed=1)
    >>> docs = list(iter_documents(3, spec))
    >>> len(docs), docs == list(iter_documents(3, spec))
    (3, True)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from embedmind_bench.vocabulary import QUESTION_WORDS, Vocabulary, build_vocabulary

# Documents are drawn in chunks of this many; changing it changes the corpus.
CHUNK = 10_000
_DOC_STREAM = 1
_QUERY_STREAM = 2


@dataclass(frozen=True)
class CorpusSpec:
    """What the generated corpus looks like.

    Attributes:
        seed: Seed of every random stream; equal specs give equal corpora.
        mean_words: Mean words per document (Gamma distributed, shape 4).
        rare_share: Probability that a content word is a one-off token.
        query_words: Mean words per question.
        query_content_share: Probability that a question word after the
            leading question word is a content word.
    """

    seed: int = 20_240_601
    mean_words: float = 24.0
    rare_share: float = 0.015
    query_words: float = 8.0
    query_content_share: float = 0.7


def _vocabulary(spec: CorpusSpec) -> Vocabulary:
    """Return the (cached) vocabulary of ``spec``."""
    return build_vocabulary(spec.seed)


def _one_off_tokens(rng: np.random.Generator, count: int) -> list[str]:
    """Draw tokens that appear about once: order codes, tickets, room numbers."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"), dtype=object)
    heads = letters[rng.integers(0, 26, size=(count, 2))].sum(axis=1)
    tails = rng.integers(100, 1_000_000, size=count)
    return [f"{h}{t}" for h, t in zip(heads.tolist(), tails.tolist(), strict=True)]


def draw_words(
    rng: np.random.Generator, vocab: Vocabulary, count: int, *, function_share: float
) -> np.ndarray:
    """Draw ``count`` words: function words with ``function_share``, else content.

    With ``vocab.function_share`` this samples the vocabulary's whole Zipf
    law; a smaller share biases towards content words, as questions are.

    Args:
        rng: The generator to draw from.
        vocab: The vocabulary and its Zipf tables.
        count: How many words to draw.
        function_share: Probability of drawing from the function words.

    Returns:
        An object array of ``count`` strings.
    """
    is_function = rng.random(count) < function_share
    words = np.empty(count, dtype=object)
    n_function = int(is_function.sum())
    ranks = np.searchsorted(vocab.function_cdf, rng.random(n_function))
    words[is_function] = vocab.function_words[ranks]
    ranks = np.searchsorted(vocab.content_cdf, rng.random(count - n_function))
    words[~is_function] = vocab.content_words[ranks]
    return words


def _sentence(words: list[str], ending: str) -> str:
    """Join words into a chat turn: capitalised, punctuated."""
    text = " ".join(words)
    return text[:1].upper() + text[1:] + ending


def _chunk(spec: CorpusSpec, index: int) -> list[str]:
    """Generate chunk ``index`` of the document stream (``CHUNK`` documents)."""
    rng = np.random.default_rng([spec.seed, _DOC_STREAM, index])
    vocab = _vocabulary(spec)
    lengths = np.clip(np.rint(rng.gamma(4.0, spec.mean_words / 4.0, CHUNK)), 3, 96)
    lengths = lengths.astype(np.int64)
    words = draw_words(rng, vocab, int(lengths.sum()), function_share=vocab.function_share)
    one_off = rng.random(words.size) < spec.rare_share * (1.0 - vocab.function_share)
    words[one_off] = _one_off_tokens(rng, int(one_off.sum()))
    endings = rng.choice(np.array([".", "?", "!", ""], dtype=object), CHUNK, p=[0.6, 0.2, 0.1, 0.1])
    bounds = np.concatenate(([0], np.cumsum(lengths))).tolist()
    flat = words.tolist()
    return [_sentence(flat[bounds[i] : bounds[i + 1]], endings[i]) for i in range(CHUNK)]


def iter_documents(n: int, spec: CorpusSpec | None = None) -> Iterator[str]:
    """Yield the first ``n`` documents of the corpus, one chunk in memory at a time.

    Args:
        n: How many documents to yield.
        spec: The corpus description; the default spec when ``None``.

    Yields:
        Chat turns as plain strings; document ``i`` is the same for every
        ``n > i``.

    Raises:
        ValueError: If ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    spec = spec or CorpusSpec()
    for index in range((n + CHUNK - 1) // CHUNK):
        docs = _chunk(spec, index)
        yield from docs[: n - index * CHUNK]


def make_queries(count: int, spec: CorpusSpec | None = None) -> list[str]:
    """Make ``count`` natural-language questions from the corpus distribution.

    Each starts with a question word; the rest are drawn like document
    words but with ``query_content_share`` content words, so a question
    mixes common terms with rarer ones, as people's questions do.

    Args:
        count: How many questions to make.
        spec: The corpus description; the default spec when ``None``.

    Returns:
        Questions such as ``"When did john book the flight to lisbon?"``
        (capitalised, ending in ``?``).
    """
    spec = spec or CorpusSpec()
    rng = np.random.default_rng([spec.seed, _QUERY_STREAM])
    vocab = _vocabulary(spec)
    lengths = np.clip(rng.poisson(spec.query_words - 1.0, count), 3, 15).tolist()
    starts = rng.integers(0, len(QUESTION_WORDS), size=count).tolist()
    share = 1.0 - spec.query_content_share
    queries = []
    for start, length in zip(starts, lengths, strict=True):
        rest = draw_words(rng, vocab, length, function_share=share).tolist()
        queries.append(_sentence([QUESTION_WORDS[start], *rest], "?"))
    return queries
