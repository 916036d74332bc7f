"""The shared input validators, on their boundary inputs."""

from __future__ import annotations

import doctest
import math

import pytest

import embedmind
from embedmind import checks
from embedmind.checks import (
    SURROGATE_MESSAGE,
    a_str,
    an_int,
    finite_number,
    has_surrogates,
    is_int,
    is_number,
    no_surrogates,
)
from embedmind.errors import InvalidInputError


def test_the_examples_in_the_docstrings_run() -> None:
    failed, tried = doctest.testmod(checks, optionflags=doctest.ELLIPSIS)
    assert failed == 0 and tried > 0


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("", False),
        ("plain", False),
        ("caf\u00e9 \U0001f600", False),  # an astral character is one code point, not a pair
        ("\ud800", True),
        ("tail \udfff", True),
        ("\ud83d\ude00", True),  # a surrogate pair spelled as two code points is not UTF-8
        ("stray \udc80", True),  # what surrogateescape decodes a stray byte to
    ],
)
def test_surrogates_are_any_code_point_in_d800_dfff(text: str, bad: bool) -> None:
    assert has_surrogates(text) is bad
    if bad:
        with pytest.raises(InvalidInputError) as caught:
            no_surrogates(text, "note")
        assert caught.value.field == "note"
        assert str(caught.value) == f"note: {SURROGATE_MESSAGE}"
    else:
        assert no_surrogates(text, "note") is text


def test_the_surrogate_message_is_the_one_the_engine_has_always_given() -> None:
    assert SURROGATE_MESSAGE == "contains unpaired surrogate characters"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, True),
        (-1, True),
        (2**70, True),
        (True, False),
        (False, False),
        (1.0, False),
        ("1", False),
        (None, False),
    ],
)
def test_is_int_refuses_bools_and_floats(value: object, expected: bool) -> None:
    assert is_int(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, True),
        (0.5, True),
        (math.nan, True),
        (-math.inf, True),
        (True, False),
        ("1", False),
        (None, False),
    ],
)
def test_is_number_refuses_bools_and_strings(value: object, expected: bool) -> None:
    assert is_number(value) is expected


def test_an_int_accepts_both_bounds_and_refuses_one_past_them() -> None:
    assert an_int(1, "k", low=1, high=10_000) == 1
    assert an_int(10_000, "k", low=1, high=10_000) == 10_000
    for bad in (0, 10_001, True, 5.0, "5", None):
        with pytest.raises(InvalidInputError, match=r"^k: expected an int within 1-10,000$"):
            an_int(bad, "k", low=1, high=10_000)


def test_an_int_without_bounds_takes_any_int_but_no_bool() -> None:
    assert an_int(-(2**80), "n") == -(2**80)
    with pytest.raises(InvalidInputError, match=r"^n: expected an int$"):
        an_int(False, "n")


@pytest.mark.parametrize(
    ("low", "high", "message"),
    [
        (1, None, "expected a positive int"),
        (0, None, "expected an int >= 0"),
        (None, 3, "expected an int <= 3"),
        (0, 100_000, "expected an int within 0-100,000"),
    ],
)
def test_an_int_messages_state_the_bounds(low: int | None, high: int | None, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        an_int(-5 if low is not None else 4, "x", low=low, high=high)
    assert str(caught.value) == f"x: {message}"


def test_an_int_takes_the_callers_message() -> None:
    with pytest.raises(InvalidInputError, match=r"^batch_size: expected an int$"):
        an_int(True, "batch_size", low=1, message="expected an int")


def test_finite_number_refuses_nan_infinities_bools_and_huge_ints() -> None:
    assert finite_number(3, "a") == 3.0 and isinstance(finite_number(3, "a"), float)
    assert finite_number(-0.0, "a") == 0.0
    for bad in (math.nan, math.inf, -math.inf, True, "1", None, 10**400):
        with pytest.raises(InvalidInputError, match=r"^a: expected a finite number$"):
            finite_number(bad, "a")


def test_a_positive_finite_number_is_above_zero() -> None:
    assert finite_number(5e-324, "t", positive=True) == 5e-324
    for bad in (0, 0.0, -0.0, -1, math.inf, math.nan, True):
        with pytest.raises(InvalidInputError, match=r"^t: expected a positive finite number$"):
            finite_number(bad, "t", positive=True)
    with pytest.raises(InvalidInputError, match=r"^t: seconds, please$"):
        finite_number(0, "t", positive=True, message="seconds, please")


@pytest.mark.parametrize("bad", [True, math.inf, math.nan, 0, -1.0, "1"])
def test_a_store_refuses_a_busy_timeout_that_is_not_a_positive_finite_number(bad: object) -> None:
    # True was taken as one second, and infinity failed later as a raw OverflowError.
    with pytest.raises(InvalidInputError) as caught:
        embedmind.Store.open(":memory:", embedder=None, busy_timeout=bad)  # type: ignore[arg-type]
    assert str(caught.value) == "busy_timeout: must be a positive number of seconds"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "contains NUL or unpaired surrogate characters"),
        ("bad \ud800", "contains NUL or unpaired surrogate characters"),
        ("x" * 11, "longer than 10 characters"),
        (b"bytes", "expected a str, got bytes"),
        (None, "expected a str, got NoneType"),
    ],
)
def test_a_str_refuses_what_cannot_be_stored_as_text(value: object, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        a_str(value, "tags", max_chars=10)
    assert str(caught.value) == f"tags: {message}"


def test_a_str_takes_the_longest_text_allowed_and_names_what_was_expected() -> None:
    assert a_str("x" * 10, "tags", max_chars=10) == "x" * 10
    assert a_str("", "tags") == ""
    with pytest.raises(InvalidInputError, match=r"^key: expected a string key, got int$"):
        a_str(3, "key", what="a string key")


# Every stored text argument of the public write path, each given one bad value. Each must be
# refused by the shared check with an InvalidInputError naming its field, before anything is
# written: a site that skipped the check would store NUL (which PostgreSQL refuses mid-transaction)
# or fail with a raw UnicodeEncodeError.
_TEXT_ARGUMENTS: list[tuple[str, dict[str, object]]] = [
    ("id", {"id": "m\x00"}),
    ("tags", {"tags": ["ok", "t\ud800"]}),
    ("agent", {"agent": "a\x00"}),
    ("session_id", {"session_id": "s\udfff"}),
    ("entities", {"entities": ["Ann\x00"]}),
    ("relations", {"relations": [("knows\x00", "someone")]}),
    ("metadata", {"metadata": {"k\x00": 1}}),
    ("metadata", {"metadata": {"k\ud800": 1}}),
]


@pytest.mark.parametrize(("field", "arguments"), _TEXT_ARGUMENTS)
def test_every_stored_text_argument_is_refused_with_nul_or_surrogates(
    field: str, arguments: dict[str, object]
) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        with pytest.raises(InvalidInputError) as caught:
            store.remember("a text", **arguments)  # type: ignore[arg-type]
        assert caught.value.field.split("[")[0] == field
        assert list(store.iter()) == []


@pytest.mark.parametrize("bad", ["k\x00", "k\ud800", 7])
def test_an_alias_key_is_refused_by_the_same_check(bad: object) -> None:
    with embedmind.Store.open(":memory:", embedder=None) as store:
        with pytest.raises(InvalidInputError):
            store.set_aliases({bad: "new york"})  # type: ignore[dict-item]
        assert store.aliases() == {}


def test_a_fragment_overlap_of_true_is_not_taken_as_one() -> None:
    from embedmind.policies import FragmentPolicy

    with pytest.raises(InvalidInputError, match=r"^overlap: expected an int within \[0, window\)$"):
        FragmentPolicy(window=4, overlap=True).resolve()  # type: ignore[arg-type]
    assert FragmentPolicy(window=4, overlap=3).resolve() is not None
