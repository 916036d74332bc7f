"""Memory ids: caller-given strings, or ULIDs minted here.

A ULID is 48 bits of milliseconds and 80 random bits in Crockford base32, so
ids sort by creation time. Within one millisecond the generator increments the
random part, keeping ids minted by one process strictly increasing.
"""

from __future__ import annotations

import os
import threading
import time

from embedmind.checks import a_str
from embedmind.errors import InvalidInputError

MAX_ID_CHARS = 256
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_ms = -1
_last_random = 0


def new_ulid() -> str:
    """Mint a new ULID, monotonic within this process."""
    global _last_ms, _last_random
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _last_random = (_last_random + 1) % (1 << _RANDOM_BITS)
        else:
            _last_random = int.from_bytes(os.urandom(10), "big")
        _last_ms = ms
        value = (ms << _RANDOM_BITS) | _last_random
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(125, -1, -5))


def validate_id(value: object, field: str = "id") -> str:
    """Check a caller-given id.

    Args:
        value: The id.
        field: The argument name, for the error message.

    Returns:
        The id, unchanged.

    Raises:
        InvalidInputError: When the id is not a str, is empty or blank, is longer
            than :data:`MAX_ID_CHARS`, or contains NUL or surrogates.
    """
    text = a_str(value, field, max_chars=MAX_ID_CHARS)
    if not text.strip():
        raise InvalidInputError(field, "must not be empty or blank")
    return text
