"""Export and import methods of :class:`embedmind.Store` (JSON Lines).

The work is done in :mod:`embedmind.engine.transfer`.
"""

from __future__ import annotations

from typing import IO

from embedmind.engine import transfer
from embedmind.engine.transfer_lines import PathArg
from embedmind.facade import Facade


class TransferMethods(Facade):
    """Mixed into :class:`embedmind.Store`."""

    def export_jsonl(
        self,
        destination: PathArg | IO[str],
        *,
        include_vectors: bool = False,
        show_progress: bool = False,
    ) -> int:
        """Write every live memory and link, and the alias table, as JSON Lines: one snapshot.

        Everything is read inside one read transaction, so the file is the
        store at one instant even while other threads or processes write (in
        WAL mode a reader never blocks writers; the write-ahead log only
        cannot be reset while the export runs). In a ``":memory:"`` store,
        whose threads share one connection, other threads wait until the
        export is done.

        A path is written through a temporary file in the same directory,
        created with mode ``0600`` (the file holds the whole store), flushed to
        disk and renamed over the target only once complete: an existing file
        is replaced, and a failed or interrupted export leaves the target as
        it was (a process killed mid-export may leave ``NAME.*.tmp`` beside
        it). A symlink is followed: the file it names is replaced. A path that
        names a pipe or device (``/dev/stdout``) is written directly. An open
        text stream is written as it is, and not closed.

        Args:
            destination: A path (str, bytes or path-like) or a text stream.
            include_vectors: Also write each memory's vectors (base64 float32).
            show_progress: Show a progress bar on stderr.

        Returns:
            How many memories were written.

        Raises:
            InvalidInputError: When ``destination`` is not a usable path (empty,
                NUL, not encodable, a directory) or not a text stream.
            OSError: When the file cannot be created or written (a missing
                directory, no permission, a full disk).
        """
        return transfer.export_jsonl(
            self._engine, destination, include_vectors=include_vectors, show_progress=show_progress
        )

    def import_jsonl(
        self,
        source: PathArg | IO[str],
        *,
        reembed: bool = False,
        show_progress: bool = False,
    ) -> int:
        """Load memories and links written by :meth:`export_jsonl`; a bad file writes nothing.

        The file is read twice. The first pass validates every line, with the
        same checks as :meth:`embedmind.Store.remember` plus those of the
        fields only an export carries, and checks that no id is used twice or
        names a memory of another namespace in the store; it writes nothing.
        The second pass writes in batches of 500, one transaction each, and
        adds relations once their targets are in. A failure of the second
        pass (a full disk, the embedder) keeps the batches before it; the
        import is idempotent, so running it again completes it.
        The file's aliases (``alias`` lines, which an export writes before its
        memories) are merged into the store's table, the file's target winning
        for a key in both, before the memories after them are written.

        A stream that cannot seek is copied to a private temporary file during
        the first pass. A stream that can seek is read from where it is.

        Args:
            source: A path (str, bytes or path-like) or a text stream.
            reembed: Ignore the file's vectors and embed with the store's model,
                even when the file names another model.
            show_progress: Show progress bars on stderr.

        Returns:
            How many memories were read.

        Raises:
            InvalidInputError: When ``source`` is not a usable path or text
                stream, the file is not an embedmind export, or a line is not
                valid. ``field`` is ``"line N: FIELD"`` (``"line N"`` for a
                line that is not a JSON object, ``"source"`` for the source
                itself); nothing was written.
            ConflictError: When an id names a memory of another namespace in
                the store (the message names the line); nothing was written.
            EmbedderMismatchError: When its vectors come from another model and
                ``reembed`` is false; nothing was written.
            OSError: When the file cannot be opened or read.
        """
        return transfer.import_jsonl(
            self._engine, source, reembed=reembed, show_progress=show_progress
        )
