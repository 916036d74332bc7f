"""The synthetic chat corpus behind the lexical benchmark: seeded, sized, Zipf-like."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from embedmind_bench.corpus import CHUNK, CorpusSpec, iter_documents, make_queries
from embedmind_bench.vocabulary import (
    FUNCTION_WORDS,
    NAMES,
    QUESTION_WORDS,
    build_vocabulary,
    zipf_weights,
)

SPEC = CorpusSpec(seed=7)
WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return list(iter_documents(20_000, SPEC))


@pytest.fixture(scope="module")
def counts(docs: list[str]) -> Counter[str]:
    return Counter(w.lower() for d in docs for w in WORD.findall(d))


def test_same_seed_same_corpus_other_seed_other_corpus(docs: list[str]) -> None:
    assert list(iter_documents(20_000, CorpusSpec(seed=7))) == docs
    assert list(iter_documents(50, CorpusSpec(seed=8))) != docs[:50]
    assert make_queries(30, SPEC) == make_queries(30, CorpusSpec(seed=7))
    assert make_queries(30, SPEC) != make_queries(30, CorpusSpec(seed=8))


@pytest.mark.parametrize("n", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1])
def test_yields_exactly_n_documents(n: int) -> None:
    assert sum(1 for _ in iter_documents(n, SPEC)) == n


def test_smaller_corpus_is_a_prefix_of_larger(docs: list[str]) -> None:
    assert list(iter_documents(CHUNK + 17, SPEC)) == docs[: CHUNK + 17]


def test_negative_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="n must be"):
        list(iter_documents(-1, SPEC))


def test_documents_are_short_chat_turns(docs: list[str]) -> None:
    lengths = np.array([len(d.split()) for d in docs])
    assert 22.5 < lengths.mean() < 25.5
    assert lengths.min() >= 3
    assert all(d[:1].isupper() or d[:1].isdigit() for d in docs[:200])


def test_word_frequencies_follow_a_zipf_like_law(counts: Counter[str]) -> None:
    total = sum(counts.values())
    ranked = np.array([n for _, n in counts.most_common()], dtype=np.float64)
    assert counts.most_common(1)[0][0] == "the"
    assert 0.02 < ranked[0] / total < 0.08  # "the" is ~5 % of English tokens
    ranks = np.arange(10, 1_000)
    slope = np.polyfit(np.log(ranks), np.log(ranked[ranks - 1]), 1)[0]
    assert -1.4 < slope < -0.8


def test_mix_of_function_content_names_numbers_and_rare_tokens(counts: Counter[str]) -> None:
    total = sum(counts.values())
    function_share = sum(counts[w] for w in set(FUNCTION_WORDS)) / total
    assert 0.45 < function_share < 0.65
    assert sum(1 for name in NAMES if counts[name]) > len(NAMES) // 2
    assert any(w.isdigit() for w in counts)
    hapax = sum(1 for n in counts.values() if n == 1)
    assert hapax > 1_000  # one-off codes and the long tail keep the dictionary growing


def test_queries_are_questions_biased_to_content_words(counts: Counter[str]) -> None:
    queries = make_queries(300, SPEC)
    terms = [[w.lower() for w in WORD.findall(q)] for q in queries]
    assert len(queries) == 300
    assert all(q.endswith("?") for q in queries)
    assert all(t[0] in QUESTION_WORDS for t in terms)
    assert 6.5 < np.mean([len(t) for t in terms]) < 9.5
    function = set(FUNCTION_WORDS) | set(QUESTION_WORDS)
    rest = [w for t in terms for w in t[1:]]
    assert sum(w in function for w in rest) / len(rest) < 0.45
    assert sum(1 for w in rest if counts[w] == 0) < len(rest) // 4


def test_zipf_weights_are_a_decreasing_distribution() -> None:
    weights = zipf_weights(5_000)
    assert weights.sum() == pytest.approx(1.0)
    assert np.all(np.diff(weights) <= 0)


def test_vocabulary_has_distinct_words() -> None:
    vocab = build_vocabulary(SPEC.seed)
    words = list(vocab.function_words) + list(vocab.content_words)
    assert len(words) == len(set(words))
    assert vocab.content_cdf[-1] == pytest.approx(1.0)
