"""Two writers making the same calls at the same moment: the races of ``tests/test_write_races.py``.

``race_workers.py STORE ME N SYNC RACE...``
    Opens the store (text only), then runs each ``RACE`` of :data:`RACES` in
    turn as writer ``ME`` (``a`` or ``b``), ``N`` calls each, started at the
    instant the test names for both processes
    (:func:`tooling.children.start_together`, stages named after the races).
    Prints ``{race: outcomes}`` as JSON.

The threads of the test call :func:`race` directly, on one shared store.
An outcome per call is ``"ok"``, the class name of the embedmind error it
raised, or ``"raw <class>: <message>"`` for any other exception: the raw
errors the races must never produce.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import embedmind
from embedmind.errors import EmbedmindError

RACES = ("supersede", "upsert_new", "upsert_existing", "namespaces")
"""Each race, by what the two writers do to the same ``i``-th memory at once:

* ``supersede``: each supersedes ``old<i>`` with a new version of its own id;
* ``upsert_new``: each writes ``y<i>`` (not stored yet) in one namespace;
* ``upsert_existing``: each writes ``x<i>``, stored before the race with the
  content one of them writes back unchanged while the other changes it (``b``
  for even ``i``, ``a`` for odd: whichever writer runs ahead, for half the
  pairs the one behind reads the content just as the other replaces it);
* ``namespaces``: each writes ``z<i>`` (not stored yet), in a namespace of its own.
"""
NAMESPACE = "ns"
SYNCHRONOUS: Final = "NORMAL"
"""How the races open the store: commits that do not wait for the disk (SQLite),
so 200 pairs take a second or two; durability is not what they test."""
_LETTERS = "bcfhjkmnpt"
"""Digits as consonants: the words stay one token, untouched by stemming."""


def word(tag: str, i: int) -> str:
    """A word of its own for ``tag`` and ``i`` (``tag`` in lower-case letters)."""
    return tag + "".join(_LETTERS[int(d)] for d in f"{i:04d}")


_TAGS = {"supersede": "s", "upsert_new": "u", "upsert_existing": "r", "namespaces": "v"}


def content(race: str, me: str, i: int) -> str:
    """What writer ``me`` writes in ``race`` for ``i``: ``a`` two words, ``b`` one."""
    tag = _TAGS[race] + me
    words = [word(tag + "q", i), word(tag + "w", i)] if me == "a" else [word(tag + "q", i)]
    return " ".join(words)


def memory_id(race: str, me: str, i: int) -> str:
    """The id writer ``me`` writes in ``race`` for ``i``."""
    if race == "supersede":
        return f"new-{me}-{i}"
    return {"upsert_new": "y", "upsert_existing": "x", "namespaces": "z"}[race] + str(i)


def namespace(race: str, me: str) -> str:
    """The namespace writer ``me`` writes to in ``race``."""
    return f"{NAMESPACE}-{me}" if race == "namespaces" else NAMESPACE


def seed(store: embedmind.Store, n: int) -> None:
    """What the races start from: ``old<i>`` to supersede, ``x<i>`` to upsert."""
    race = "upsert_existing"
    store.remember_many(
        [{"content": word("old", i), "id": f"old{i}", "namespace": NAMESPACE} for i in range(n)]
        + [
            {"content": content(race, "ba"[i % 2], i), "id": f"x{i}", "namespace": NAMESPACE}
            for i in range(n)
        ]
    )


def call(store: embedmind.Store, race: str, me: str, i: int) -> str:
    """Make writer ``me``'s ``i``-th call of ``race``; its outcome."""
    supersedes = [f"old{i}"] if race == "supersede" else []
    try:
        store.remember(
            content(race, me, i),
            id=memory_id(race, me, i),
            namespace=namespace(race, me),
            supersedes=supersedes,
        )
    except EmbedmindError as e:
        return type(e).__name__
    except Exception as e:  # the raw errors a race must never raise
        return f"raw {type(e).__name__}: {e}"
    return "ok"


def race(store: embedmind.Store, name: str, me: str, n: int) -> list[str]:
    """Writer ``me``'s ``n`` calls of race ``name``, in order; their outcomes."""
    return [call(store, name, me, i) for i in range(n)]


def main(argv: list[str]) -> int:
    """Run every race as one writer process (see the module docstring)."""
    from tooling.mp_workers import _meet

    path, me, n, sync, names = argv[0], argv[1], int(argv[2]), argv[3], argv[4:]
    outcomes: dict[str, Any] = {}
    with embedmind.Store.open(path, embedder=None, synchronous=SYNCHRONOUS) as store:
        for name in names:
            _meet(sync, name)
            outcomes[name] = race(store, name, me, n)
    print(json.dumps(outcomes))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tooling`, run as a script
    sys.exit(main(sys.argv[1:]))
