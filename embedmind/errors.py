"""The exception hierarchy of embedmind.

Every error the engine raises derives from :class:`EmbedmindError`. Subclasses
also inherit the builtin that matches their meaning (``KeyError`` for a missing
memory, ``ValueError`` for bad input, ``TypeError`` for a filter whose type
disagrees with the stored value), so callers that only know the builtins still
catch them. Each carries its context as attributes and a message that says how
to fix the problem.
"""

from __future__ import annotations

import shlex


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

    def __init__(self, id: str, what: str = "memory", message: str | None = None) -> None:
        super().__init__(message or f"{what} {id!r} does not exist (or was forgotten)")
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


REPAIR_HINT = (
    "restore it from an export or backup (import_jsonl), or replace it with "
    "store.redact(id, content) or drop it with store.forget(id) / store.delete(id)"
)


class DamagedRecordError(StorageError):
    """A stored record no longer reads back as it was written; other records are unaffected.

    The record is a memory (its row, or the entity names and relations it
    carries) or, when ``link`` is set, a namespace link.

    Attributes:
        ids: The damaged memories (their internal key as ``"key:N"`` when even
            the id cannot be read); empty for a namespace link.
        reason: What is wrong, beginning with the field, e.g. ``"content is
            not valid UTF-8"`` or ``"relations: a kind is not valid UTF-8"``.
        link: ``(src, dst)`` of a damaged namespace link, else ``None``.
    """

    def __init__(self, ids: list[str], reason: str, *, link: tuple[str, str] | None = None) -> None:
        if link is None:
            named = ", ".join(repr(i) for i in ids[:10]) + (" ..." if len(ids) > 10 else "")
            message = (
                f"memory {named} is damaged in the store ({reason}); {REPAIR_HINT}; "
                "on SQLite, `embedmind doctor --verify` lists every memory whose row is damaged"
            )
        else:
            src, dst = link
            message = (
                f"namespace link {src!r} -> {dst!r} is damaged in the store ({reason}); "
                f"link them again with store.link_namespaces({src!r}, {dst!r}, ...) "
                f"or remove it with store.unlink({src!r}, {dst!r})"
            )
        super().__init__(message)
        self.ids = tuple(ids)
        self.reason = reason
        self.link = link


class RedactionIncompleteError(StorageError, TimeoutError):
    """A redaction committed, but the old content may still be in the write-ahead log.

    The memory already holds the new content everywhere it is read from; what
    is not done is the truncation of the WAL, which still holds the pages of
    the old content until every reader of an older snapshot has finished.

    Attributes:
        id: The redacted memory.
        reason: What prevented the truncation.
    """

    def __init__(self, id: str, reason: str, timeout: float) -> None:
        super().__init__(
            f"redacted {id!r}: the new content is committed, but the old bytes remain in the "
            f"write-ahead log because {reason} (waited {timeout:g}s); they are removed once "
            "readers finish: run the same redact again, or vacuum(), when they have "
            "(a longer checkpoint_timeout= waits for them)"
        )
        self.id = id
        self.reason = reason


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

    Raised by ``Store.open`` for the store's own vectors, and by
    ``Store.import_jsonl`` for an export's vectors (then ``source`` is set).

    Attributes:
        path: The store file.
        recorded: The model identity recorded in the store (or in the export).
        given: The identity of the embedder passed to ``Store.open`` (for an
            import: the store's embedder).
        source: The export being imported, ``""`` when its name is unknown;
            ``None`` when the mismatch is the store's own.
        name: The registered name that chooses the given embedder, when there
            is one (the CLI's ``--embedder``, or the model id itself when it is
            registered: :func:`embedmind.plugins.registered_name`); it goes
            into the suggested command. ``None``: the message points to Python.
    """

    def __init__(
        self,
        path: str,
        recorded: dict[str, str],
        given: dict[str, str],
        *,
        source: str | None = None,
        name: str | None = None,
    ) -> None:
        if source is None:
            message = (
                f"store {path!r} holds vectors from {_describe(recorded)}, but it was opened "
                f"with {_describe(given)}; open it with that embedder, or re-embed every memory "
                f"with the new one: {_reembed_hint(path, name)}"
            )
        else:
            export = f"the export {source!r}" if source else "the export being imported"
            hint = _import_hint(path, source, name)
            message = (
                f"{export} holds vectors from {_describe(recorded)}, "
                f"but store {path!r} embeds with {_describe(given)}; import it with "
                f"reembed=True ({hint}) to embed its memories again with the store's model, "
                "or import it into a store of the export's model"
            )
        super().__init__(message)
        self.path = path
        self.recorded = recorded
        self.given = given
        self.source = source
        self.name = name


def _reembed_hint(path: str, name: str | None) -> str:
    """The exact way to re-embed the store at ``path`` with the embedder given."""
    # The CLI's --embedder accepts only a registered name; any other embedder is
    # an object that only Python can pass. The caller looks the name up: an error
    # never loads plugins (embedmind.plugins imports this module).
    if name is None:
        return f"call `embedmind.reembed({path!r}, embedder)` in Python"
    # Global options precede the subcommand: argparse rejects them after it.
    return f"`embedmind --store {shlex.quote(path)} --embedder {shlex.quote(name)} reembed`"


def _import_hint(path: str, source: str, name: str | None) -> str:
    """The command-line form of an import with re-embedding."""
    embedder = "" if name is None else f" --embedder {shlex.quote(name)}"
    command = f"embedmind --store {shlex.quote(path)}{embedder} import"
    if not source:  # a stream: no file name to put on the command line, so say FILE
        return f"on the command line, `{command} FILE --reembed`"
    return f"`{command} {shlex.quote(source)} --reembed`"


def _describe(identity: dict[str, str]) -> str:
    return (
        f"{identity.get('model_id', '?')} ({identity.get('dims', '?')} dims, "
        f"{identity.get('metric', '?')}, weights {identity.get('fingerprint', '?')[:12]})"
    )
