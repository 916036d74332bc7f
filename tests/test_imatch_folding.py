"""``$imatch`` is ``fold(needle) in fold(value)`` with Python's ``str.casefold``, on every backend.

The backends disagreed (SQLite folded with ``str.lower``, PostgreSQL with a
simple lowercase mapping): ``"istanbul"`` matched ``"İstanbul"`` on one only,
``"ß"`` never met ``"ss"``, and a final sigma never met ``σ``. Values and
needles here are drawn from an alphabet of the characters case folding treats
specially, and each read is compared with the oracle ``str.casefold``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import embedmind

ALPHABET = [
    "a", "A", "s", "S", "k", "K", "\u212a",  # Kelvin sign: folds to k
    "i", "I", "\u0130", "\u0131", "i\u0307", "\u0307",  # Turkish dotted and dotless i
    "\u03a3", "\u03c3", "\u03c2",  # sigma, and final sigma
    "\u00df", "\u1e9e", "ss", "SS",  # sharp s, capital sharp s
    "\ufb01", "\ufb00", "\ufb03", "fi", "FI", "\u01c4", "\u01c5", "\u01c6",  # ligatures, DŽ
    "\u00c5", "\u212b", "\u00e5", "\u00b5", "\u03bc", "\u039c",  # Å and Angstrom, micro and mu
    "\u2126", "\u03c9", "\u03a9",  # Ohm sign and omega
    "\u13a0", "\uab70", "\u13f0", "\u13f8",  # Cherokee: small letters fold to capitals
    "\u0390", "\u03b9\u0308\u0301", "\u1fb3", "\u1fbc", "\u03b9", "\u0345",  # Greek marks
    "\U00010400", "\U00010428",  # Deseret
    "\u10a0", "\u2d00", "\u1c90", "\u10d0",  # Georgian: Asomtavruli, Nuskhuri, Mtavruli
    "\u0149", "\u02bcn", "\u017f", "\u01f0", "\u1e96", "\u0587", "\ufb13",  # one to many
    "\u0178", "\u00ff", "\u00e9", "e\u0301", " ", "7",
]  # fmt: skip
"""Characters (and spellings) whose folding is not their lowercase, or takes several."""
CASES = [str, str.upper, str.lower, str.casefold, str.swapcase, str.title]


def _text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, most)))


VALUES = [_text(random.Random(seed), 6) for seed in range(150)] + [
    "\u0130stanbul", "istanbul", "i\u0307stanbul", "\u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2",
    "Stra\u00dfe", "STRASSE", "\ufb01le",
]  # fmt: skip


@pytest.fixture(scope="module")
def store() -> Iterator[embedmind.Store]:
    """One memory per value under the key ``t``, its id the value's index; and one non-string."""
    with embedmind.Store.open(":memory:", embedder=None) as s:
        s.remember_many(
            [embedmind.Draft("m", id=str(i), metadata={"t": v}) for i, v in enumerate(VALUES)]
            + [embedmind.Draft("m", id="number", metadata={"t": 7})]
        )
        yield s


def expected(needle: str) -> set[str]:
    """The oracle: the ids whose value holds the needle once both are casefolded."""
    return {str(i) for i, value in enumerate(VALUES) if needle.casefold() in value.casefold()}


@st.composite
def needles(draw: st.DrawFn) -> str:
    """A stored value's slice in another case (to hit), or any text of the alphabet."""
    if draw(st.booleans()):
        value = draw(st.sampled_from(VALUES))
        start = draw(st.integers(0, len(value)))
        end = draw(st.integers(start, len(value)))
        return draw(st.sampled_from(CASES))(value[start:end])
    return "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=3)))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(needle=needles())
def test_imatch_is_casefolded_containment(store: embedmind.Store, needle: str) -> None:
    got = {m.id for m in store.iter(where={"t": {"$imatch": needle}})}
    assert got == expected(needle), (needle, sorted(got ^ expected(needle)))


@pytest.mark.parametrize(
    ("needle", "value", "matches"),
    [
        ("istanbul", "\u0130stanbul", False),  # İ folds to i and a combining dot
        ("i\u0307stanbul", "\u0130STANBUL", True),
        ("\u03bf\u03b4\u03bf\u03c3", "\u039f\u0394\u039f\u03a3", True),  # final sigma is σ
        ("strasse", "Stra\u00dfe", True),
        ("\u1e9e", "ss", True),
        ("FILE", "\ufb01le", True),
        ("\u00e9", "e\u0301", False),  # no normalisation
    ],
)
def test_the_cases_that_split_the_backends(needle: str, value: str, matches: bool) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as s:
        s.remember("m", metadata={"t": value})
        assert len(list(s.iter(where={"t": {"$imatch": needle}}))) == int(matches)


def test_every_connection_folds(tmp_path: Path) -> None:
    # A file store gives each thread its own connection: each must know the fold.
    with embedmind.Store.open(str(tmp_path / "f.mind"), embedder=None) as s:
        s.remember("m", metadata={"t": "STRA\u1e9eE"})
        found: list[int] = []

        def read() -> None:
            found.append(len(list(s.iter(where={"t": {"$imatch": "strasse"}}))))

        threads = [threading.Thread(target=read) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert found == [1, 1, 1]
