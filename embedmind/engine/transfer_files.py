"""The files and streams an export writes to and an import reads from (paths, text, binary)."""

from __future__ import annotations

import io
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from embedmind.engine.transfer_lines import Lines
from embedmind.errors import InvalidInputError


def line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


# -- paths and streams -----------------------------------------------------------------------


def is_path(value: object) -> bool:
    return isinstance(value, str | bytes | os.PathLike)


def checked_path(value: object, field: str) -> str:
    """Validate a path argument and return it as a str.

    Raises:
        InvalidInputError: When it is empty, contains NUL or cannot be encoded
            for the file system (``open`` would raise a raw ``ValueError``).
    """
    try:
        text = os.fsdecode(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(field, "expected a path or a text stream") from None
    if not text or "\x00" in text:
        raise InvalidInputError(field, "must be a non-empty path without NUL")
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise InvalidInputError(
            field, "contains characters the file system cannot encode"
        ) from None
    return text


def is_binary(stream: object) -> bool:
    return isinstance(stream, io.RawIOBase | io.BufferedIOBase)


@contextmanager
def text_sink(destination: object) -> Iterator[IO[str]]:
    if is_path(destination):
        with replacement(checked_path(destination, "destination")) as handle:
            yield handle
        return
    if is_binary(destination) or not callable(getattr(destination, "write", None)):
        raise InvalidInputError("destination", "expected a path or a text stream open for writing")
    yield destination  # type: ignore[misc]


@contextmanager
def replacement(path: str) -> Iterator[IO[str]]:
    """A private temporary file that replaces ``path`` when the block completes.

    Raises:
        InvalidInputError: When ``path`` names a directory.
        OSError: When the temporary file cannot be created, written or renamed.
    """
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InvalidInputError(
            "destination", f"{path!r} is a directory; name a file like 'backup.jsonl'"
        )
    if info is not None and not stat.S_ISREG(info.st_mode):
        # A pipe, a terminal, /dev/stdout: there is no file to replace, and
        # renaming over a device node would be wrong. Stream into it.
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
        return
    # Beside the file a symlink names, so the rename stays on one file system
    # and the symlink keeps pointing at the new file.
    target = os.path.realpath(path)
    directory, name = os.path.split(target)
    prefix = name + "." if len(os.fsencode(name)) <= 200 else "embedmind-export."
    fd, temp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise
    # The rename is durable only once the directory is synced: after a power
    # cut an acknowledged backup must not turn back into the old one.
    dir_fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextmanager
def text_source(source: object) -> Iterator[Callable[[], Lines]]:
    """Yield a function returning the source's lines from the start, each time it is called.

    A path is opened in binary mode and decoded line by line, so an invalid
    byte is reported on its own line.

    Raises:
        InvalidInputError: When ``source`` is not a usable path or text stream.
    """
    if is_path(source):
        path = checked_path(source, "source")
        if os.path.isdir(path):
            raise InvalidInputError("source", f"{path!r} is a directory; name an export file")
        with open(path, "rb") as handle, replayable(handle) as replay:
            yield replay
        return
    if is_binary(source) or not callable(getattr(source, "__iter__", None)):
        raise InvalidInputError(
            "source", "expected a path or a text stream (open the file in text mode)"
        )
    with replayable(source) as replay:
        yield replay


@contextmanager
def replayable(stream: Any) -> Iterator[Callable[[], Lines]]:
    """Read ``stream`` twice: rewound when it can seek, else from a copy made the first time.

    The copy (a private, unlinked temporary file) holds each numbered line as
    a JSON array, ASCII only, so the second pass sees exactly the lines and
    numbers the first one validated, whatever their line endings.
    """
    start = position(stream)
    if start is not None:

        def rewind() -> Lines:
            stream.seek(start)
            return numbered(stream)

        yield rewind
        return
    with tempfile.TemporaryFile("w+", encoding="ascii", newline="\n") as spool:
        copied = False

        def replay() -> Lines:
            nonlocal copied
            if copied:
                spool.seek(0)
                return ((int(n), str(t)) for n, t in map(json.loads, spool))
            copied = True
            return spooled(numbered(stream), spool)

        yield replay


def position(stream: Any) -> Any:
    """Where a seekable stream is now, or ``None`` when it cannot be rewound (a pipe)."""
    seekable = getattr(stream, "seekable", None)
    try:
        return stream.tell() if callable(seekable) and seekable() else None
    except (OSError, ValueError):
        return None


def spooled(lines: Lines, spool: IO[str]) -> Lines:
    for number, text in lines:
        spool.write(json.dumps([number, text]) + "\n")
        yield number, text


def numbered(lines: Iterable[object]) -> Lines:
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidInputError(
                    f"line {number}", f"not UTF-8 (byte {e.start + 1} of the line)"
                ) from None
        elif isinstance(line, str):
            text = line
        else:
            raise InvalidInputError("source", f"expected lines of text, got {type(line).__name__}")
        if number == 1:
            text = text.removeprefix("\ufeff")  # a byte order mark some editors write
        if text.strip():
            yield number, text
