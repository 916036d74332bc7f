"""The input validators the engine shares, each written once.

Every public entry point checks its arguments before any transaction begins,
and the same few checks recur: text that SQLite can bind as UTF-8, an ``int``
that is not a ``bool`` (``True`` is an ``int`` to Python, never a count to a
caller), a real number. The predicates (``has_surrogates``, ``is_int``,
``is_number``) suit callers that raise their own error type; the validators
raise :class:`~embedmind.errors.InvalidInputError` naming the field.

This module sits at the bottom of the import layers: it imports only
:mod:`embedmind.errors`.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import TypeGuard

from embedmind.errors import InvalidInputError

SURROGATE_MESSAGE = "contains unpaired surrogate characters"
TEXT_MESSAGE = "contains NUL or unpaired surrogate characters"


def has_surrogates(text: str) -> bool:
    r"""Whether ``text`` holds a surrogate code point, so cannot be UTF-8.

    SQLite binds text as UTF-8, and a lone surrogate (``"\ud800"``, from a
    bad decode) would surface as a raw ``UnicodeEncodeError`` deep inside a
    transaction. A Python ``str`` never holds a valid pair: any surrogate code
    point in it fails to encode.

    Args:
        text: The text to check.

    Returns:
        True when ``text`` cannot be encoded as UTF-8.

    Example:
        >>> has_surrogates("caf\u00e9"), has_surrogates("bad \ud800")
        (False, True)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def no_surrogates(text: str, field: str) -> str:
    """Refuse text that cannot be stored as UTF-8.

    Args:
        text: The text to check (already known to be a ``str``).
        field: The argument name, for the error message.

    Returns:
        ``text``, unchanged.

    Raises:
        InvalidInputError: When ``text`` holds a surrogate code point.
    """
    if has_surrogates(text):
        raise InvalidInputError(field, SURROGATE_MESSAGE)
    return text


def a_str(value: object, field: str, *, what: str = "a str", max_chars: int | None = None) -> str:
    r"""Check a text argument that is stored or bound as text.

    A stored name, key, tag or id must be a ``str`` that SQLite and
    PostgreSQL both take as text: no NUL (PostgreSQL refuses it in text and
    C APIs cut at it) and no unpaired surrogate (see :func:`has_surrogates`).

    Args:
        value: The argument.
        field: The argument name, for the error message.
        what: What was expected, for the type error ("a str", "a string key").
        max_chars: The longest text accepted, in characters (``None``: no limit).

    Returns:
        ``value``, unchanged.

    Raises:
        InvalidInputError: When ``value`` is not a ``str``, holds NUL or a
            surrogate, or is longer than ``max_chars``.

    Example:
        >>> a_str("dentist", "tags")
        'dentist'
        >>> a_str("a\x00b", "tags")
        Traceback (most recent call last):
        ...
        embedmind.errors.InvalidInputError: tags: contains NUL or unpaired surrogate characters
    """
    if not isinstance(value, str):
        raise InvalidInputError(field, f"expected {what}, got {type(value).__name__}")
    if "\x00" in value or has_surrogates(value):
        raise InvalidInputError(field, TEXT_MESSAGE)
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInputError(field, f"longer than {max_chars:,} characters")
    return value


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an ``int`` and not a ``bool``.

    Example:
        >>> is_int(3), is_int(True), is_int(3.0)
        (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is an ``int`` or a ``float`` and not a ``bool``.

    NaN and the infinities are numbers here; :func:`finite_number` refuses them.

    Example:
        >>> is_number(0.5), is_number(2), is_number(False), is_number("1")
        (True, True, False, False)
    """
    return isinstance(value, int | float) and not isinstance(value, bool)


def an_int(
    value: object,
    field: str,
    *,
    low: int | None = None,
    high: int | None = None,
    message: str | None = None,
) -> int:
    """Check an integer argument, refusing bools, within ``[low, high]``.

    Args:
        value: The argument.
        field: The argument name, for the error message.
        low: The smallest value accepted (``None``: no lower bound).
        high: The largest value accepted (``None``: no upper bound).
        message: The error text; the default states the bounds
            ("expected a positive int", "expected an int within 1-10,000").

    Returns:
        ``value``, unchanged.

    Raises:
        InvalidInputError: When ``value`` is not an int, is a bool, or lies
            outside the bounds.

    Example:
        >>> an_int(10, "k", low=1, high=10_000)
        10
        >>> an_int(True, "k", low=1)
        Traceback (most recent call last):
        ...
        embedmind.errors.InvalidInputError: k: expected a positive int
    """
    if (
        not is_int(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise InvalidInputError(field, message or _int_message(low, high))
    return value


def finite_number(
    value: object, field: str, *, positive: bool = False, message: str | None = None
) -> float:
    """Check a real-number argument: not a bool, not NaN, not infinite.

    Args:
        value: The argument (an ``int`` or a ``float``).
        field: The argument name, for the error message.
        positive: Refuse zero and negative numbers too.
        message: The error text; the default says what was expected.

    Returns:
        ``value`` as a ``float``.

    Raises:
        InvalidInputError: When ``value`` is not a finite number (or, with
            ``positive``, not above zero).

    Example:
        >>> finite_number(1, "alpha")
        1.0
        >>> finite_number(float("nan"), "alpha")
        Traceback (most recent call last):
        ...
        embedmind.errors.InvalidInputError: alpha: expected a finite number
    """
    if is_number(value):
        try:
            number = float(value)
        except OverflowError:  # an int past the float range: not finite as a float
            number = math.inf
        if math.isfinite(number) and (number > 0 or not positive):
            return number
    default = "expected a positive finite number" if positive else "expected a finite number"
    raise InvalidInputError(field, message or default)


_MAX_SECONDS = _dt.timedelta.max.total_seconds()


def seconds(value: object, field: str) -> _dt.timedelta:
    """Check a duration given in seconds (a CLI flag, a tool argument) and return it.

    ``timedelta(seconds=...)`` raises a bare ``OverflowError`` or
    ``ValueError`` for a non-finite or huge number; this says what to pass.
    A duration that ends past the year 9999 is refused later, where the
    instant is computed.

    Raises:
        InvalidInputError: When ``value`` is not a positive finite number, or
            is longer than a ``timedelta`` holds.

    Example:
        >>> seconds(90, "ttl")
        datetime.timedelta(seconds=90)
        >>> seconds(float("inf"), "ttl")
        Traceback (most recent call last):
        ...
        embedmind.errors.InvalidInputError: ttl: expected a positive finite number of seconds
    """
    number = finite_number(
        value, field, positive=True, message="expected a positive finite number of seconds"
    )
    if number >= _MAX_SECONDS:
        raise InvalidInputError(
            field, f"expected fewer than {_MAX_SECONDS:,.0f} seconds (2.7 million years)"
        )
    return _dt.timedelta(seconds=number)


def _int_message(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"expected an int within {low:,}-{high:,}"
    if low == 1:
        return "expected a positive int"
    if low is not None:
        return f"expected an int >= {low:,}"
    if high is not None:
        return f"expected an int <= {high:,}"
    return "expected an int"
