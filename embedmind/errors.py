"""The exception hierarchy of embedmind.

Every error the engine raises derives from :class:`EmbedmindError`. Subclasses
also inherit the builtin that matches their meaning (``KeyError`` for a missing
memory, ``ValueError`` for bad input, ``TypeError`` for a filter whose type
disagrees with the stored value), so callers that only know the builtins still
catch them. Each carries its context as attributes and a message that says how
to fix the problem.
"""

from __future__ import annotations


class EmbedmindError(Exception):
    """Base class of every error raised by embedmind."""


class InvalidInputError(EmbedmindError, ValueError):
    """A public call received input it cannot accept; nothing was written.

    Attributes:
        field: The name of the offending argument or field.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class InvalidFilterError(InvalidInputError):
    """A ``where`` filter is malformed (unknown operator, bad operand shape)."""


class FilterTypeError(EmbedmindError, TypeError):
    """A filter compares a key against a value of a type it cannot be compared with.

    Attributes:
        key: The metadata key whose stored value disagrees with the filter.
        operator: The operator that could not be applied.
    """

    def __init__(self, key: str, operator: str, message: str) -> None:
        super().__init__(f"where[{key!r}] {operator}: {message}")
        self.key = key
        self.operator = operator


class NotFoundError(EmbedmindError, KeyError):
    """A memory (or other named object) does not exist.

    Attributes:
        id: The identifier that was looked up.
    """

    def __init__(self, id: str, what: str = "memory") -> None:
        super().__init__(f"{what} {id!r} does not exist (or was forgotten)")
        self.id = id

    def __str__(self) -> str:
        # KeyError quotes its argument; keep the message readable instead.
        return str(self.args[0])


class ConflictError(EmbedmindError, ValueError):
    """A write conflicts with existing data (e.g. an id reused in another namespace).

    Attributes:
        id: The conflicting identifier.
    """

    def __init__(self, id: str, message: str) -> None:
        super().__init__(message)
        self.id = id


class StorageError(EmbedmindError, OSError):
    """The storage layer failed (I/O, corruption, SQLite error); the cause is chained."""


class StoreBusyError(StorageError, TimeoutError):
    """The writer lock was not obtained within the store's busy timeout.

    Attributes:
        path: The store file.
        waited: Seconds spent waiting.
    """

    def __init__(self, path: str, waited: float) -> None:
        super().__init__(
            f"store {path!r} is busy: another writer held the lock for {waited:.2f}s; "
            "retry, or open the store with a larger busy_timeout"
        )
        self.path = path
        self.waited = waited


class SchemaVersionError(StorageError):
    """The store file was written by a newer embedmind (or is not an embedmind store).

    Attributes:
        found: The schema version recorded in the file.
        supported: The newest schema version this build understands.
    """

    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"store {path!r} has schema version {found}, newer than the {supported} this "
            "embedmind supports; upgrade embedmind to open it"
        )
        self.found = found
        self.supported = supported


class StoreClosedError(EmbedmindError, RuntimeError):
    """The store was used after :meth:`embedmind.Store.close`."""


class EmbedderError(EmbedmindError, RuntimeError):
    """The embedder failed or returned vectors that cannot be stored."""


class EmbedderMismatchError(EmbedmindError, ValueError):
    """The store's vectors come from another embedding model than the one given.

    Attributes:
        recorded: The model identity recorded in the store.
        given: The identity of the embedder passed to ``Store.open``.
    """

    def __init__(self, path: str, recorded: dict[str, str], given: dict[str, str]) -> None:
        super().__init__(
            f"store {path!r} holds vectors from {_describe(recorded)}, but it was opened with "
            f"{_describe(given)}; open it with that embedder, or run "
            f"`embedmind reembed --store {path}` to re-embed every memory with the new one"
        )
        self.recorded = recorded
        self.given = given


def _describe(identity: dict[str, str]) -> str:
    return (
        f"{identity.get('model_id', '?')} ({identity.get('dims', '?')} dims, "
        f"{identity.get('metric', '?')}, weights {identity.get('fingerprint', '?')[:12]})"
    )
