"""LangGraph namespace tuples as embedmind namespaces, and item ids derived from them.

Labels and keys are compared by code point, as LangGraph's ``InMemoryStore``
does: ``("users", "Å")`` (U+212B) and ``("users", "Å")`` (U+00C5) are two
namespaces. The engine puts every namespace in Unicode NFC form, so each label
becomes a ``/`` segment the engine stores unchanged: characters the engine
gives a meaning to (``/``, ``*``, ``%``, control characters) are
percent-encoded, so labels never merge or split (``("a", "b/c")`` is not
``("a", "b", "c")``); a combining mark right after an escape (or opening a
label) is encoded too, as ``%2A`` followed by U+0301 would compose into ``%2Á``.
When that is not yet NFC (the label is not, as U+212B), more is encoded until
it is: the characters NFC could change, then, failing that, every non-ASCII
one. A segment decodes to exactly its label, so distinct labels never share
items.

Stores written before kept every label in NFC: an NFC label's segment is the
one they wrote, so their items are found under it; an item written then under
a non-NFC spelling is found under its NFC spelling (the only one it kept).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable

_ESCAPED = frozenset("%/*")
_ESCAPE = re.compile(r"%u([0-9A-F]{6})|%([0-9A-F]{2})")
_JAMO_VOWELS_AND_TRAILS = range(0x1161, 0x11C3)  # compose with a preceding jamo under NFC


def encode_label(label: str) -> str:
    """Encode one label as a single engine namespace segment that NFC leaves unchanged.

    Each step encodes more characters; the first whose result is NFC is taken.
    """
    for also in (_never, _unstable):
        segment = _encoded(label, also)
        if unicodedata.is_normalized("NFC", segment):
            return segment
    return _encoded(label, _non_ascii)  # plain ASCII: NFC by construction


def _encoded(label: str, also: Callable[[str], bool]) -> str:
    """``label`` with the engine's reserved characters, and those ``also`` picks, escaped."""
    blank = not label.strip()  # the engine refuses a whitespace-only segment
    out: list[str] = []
    escaped_before = True  # a label opens after "/": treat its start like an escape
    for ch in label:
        mark = unicodedata.category(ch).startswith("M")
        if (
            blank
            or ch in _ESCAPED
            or unicodedata.category(ch) in ("Cc", "Cs")
            or (mark and escaped_before)
            or also(ch)
        ):
            code = ord(ch)
            out.append(f"%{code:02X}" if code < 0x100 else f"%u{code:06X}")
            escaped_before = True
        else:
            out.append(ch)
            escaped_before = False
    return "".join(out)


def _never(ch: str) -> bool:
    return False


def _unstable(ch: str) -> bool:
    """Whether NFC could change ``ch`` or join it to the character before it."""
    return not ch.isascii() and (
        unicodedata.combining(ch) != 0
        or unicodedata.category(ch).startswith("M")
        or unicodedata.normalize("NFD", ch) != ch
        or ord(ch) in _JAMO_VOWELS_AND_TRAILS
    )


def _non_ascii(ch: str) -> bool:
    return not ch.isascii()


def decode_label(segment: str) -> str:
    """The label :func:`encode_label` encoded as ``segment``."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), segment)


def to_namespace(root: str, labels: tuple[str, ...]) -> str:
    """The engine namespace of a LangGraph namespace tuple (``root`` in NFC, as stored).

    Raises:
        ValueError: When the tuple is empty or a label is not a non-empty str
            without ``.`` (LangGraph's own rule).
    """
    if not isinstance(labels, tuple) or not labels:
        raise ValueError("a namespace is a non-empty tuple of labels, e.g. ('users', 'alice')")
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise ValueError(
                f"invalid namespace label {label!r}: a non-empty str without '.' or NUL"
            )
    return "/".join([root, *(encode_label(label) for label in labels)])


def to_labels(root: str, namespace: str) -> tuple[str, ...]:
    """The LangGraph tuple of an engine namespace written by :func:`to_namespace`."""
    return tuple(decode_label(part) for part in namespace[len(root) + 1 :].split("/"))


def item_id(namespace: str, key: str) -> str:
    """The memory id of item ``key`` in ``namespace`` (both already in their stored form)."""
    digest = hashlib.blake2b(f"{namespace}\x00{key}".encode(), digest_size=16).hexdigest()
    return "lg:" + digest
