"""LangGraph namespace tuples as embedmind namespaces, and item ids derived from them.

One normalisation comes first: every label is put in Unicode NFC form before
anything is derived from it, because the engine stores namespaces in NFC.
Deriving the item id from the raw label made ``("users", "Å")`` (U+212B) and
``("users", "Å")`` (U+00C5) share a namespace but not an id (a ``get`` with one
spelling missed the item, and a search returned the other spelling's item).

Each label then becomes one ``/`` segment under the root: characters the
engine gives a meaning to (``/``, ``*``, ``%``, control characters) are
percent-encoded, so labels never merge or split (``("a", "b/c")`` is not
``("a", "b", "c")``). A combining mark right after an escape (or opening a
label) is encoded too: ``%2A`` followed by U+0301 would otherwise compose into
``%2Á`` under NFC and decode to another label.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_ESCAPED = frozenset("%/*")
_ESCAPE = re.compile(r"%u([0-9A-F]{6})|%([0-9A-F]{2})")


def nfc(text: str) -> str:
    """The NFC form of ``text``: the one spelling every label and key is used in."""
    return unicodedata.normalize("NFC", text)


def encode_label(label: str) -> str:
    """Encode one NFC label as a single engine namespace segment."""
    blank = not label.strip()  # the engine refuses a whitespace-only segment
    out: list[str] = []
    escaped_before = True  # a label opens after "/": treat its start like an escape
    for ch in label:
        mark = unicodedata.category(ch).startswith("M")
        if blank or ch in _ESCAPED or unicodedata.category(ch) == "Cc" or (mark and escaped_before):
            code = ord(ch)
            out.append(f"%{code:02X}" if code < 0x100 else f"%u{code:06X}")
            escaped_before = True
        else:
            out.append(ch)
            escaped_before = False
    return "".join(out)


def decode_label(segment: str) -> str:
    """The label :func:`encode_label` encoded as ``segment``."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), segment)


def to_namespace(root: str, labels: tuple[str, ...]) -> str:
    """The engine namespace of a LangGraph namespace tuple (labels NFC-normalised first).

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
    return "/".join([root, *(encode_label(nfc(label)) for label in labels)])


def to_labels(namespace: str) -> tuple[str, ...]:
    """The LangGraph tuple of an engine namespace written by :func:`to_namespace`."""
    return tuple(decode_label(part) for part in namespace.split("/")[1:])


def item_id(namespace: str, key: str) -> str:
    """The memory id of item ``key`` in ``namespace`` (both already in their stored form)."""
    digest = hashlib.blake2b(f"{namespace}\x00{key}".encode(), digest_size=16).hexdigest()
    return "lg:" + digest
