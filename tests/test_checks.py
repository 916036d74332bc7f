"""The shared input validators, on their boundary inputs."""

from __future__ import annotations

import doctest
import math

import pytest

import embedmind
from embedmind import checks
from embedmind.checks import (
    SURROGATE_MESSAGE,
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
