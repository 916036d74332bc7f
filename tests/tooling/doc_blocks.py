"""Run a page's Python code blocks one after another in this interpreter.

Usage: python doc_blocks.py BLOCKS.json RESULTS.jsonl

``BLOCKS.json`` is a list of ``{"where": ..., "path": ..., "cwd": ...}``: each block's
source file and the empty directory it runs in. Each block runs as ``__main__``
(:func:`runpy.run_path`) the way ``python -c`` would run it, but the page pays for the
interpreter and its imports (the engine, LangChain, LlamaIndex: seconds each) once
instead of once per block. What a block could leave behind for the next one is put back
after it: the working directory, ``sys.path``, the environment and the warning filters.
Appends one line ``{"where": ..., "error": traceback-or-null}`` to ``RESULTS.jsonl`` as
each block ends, so a block that kills the interpreter is the first one without a line;
a block that fails does not stop the ones after it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import runpy
import sys
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def _isolated(cwd: str) -> Iterator[None]:
    saved_path, saved_environ, saved_cwd = list(sys.path), dict(os.environ), os.getcwd()
    sys.path[0] = ""  # as under `python -c`: the working directory, not this script's
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():
            yield
    finally:
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_environ)
        os.chdir(saved_cwd)
        gc.collect()  # stores a block left open close their files before the next one runs


def _run(path: str, cwd: str) -> str | None:
    with _isolated(cwd):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as stop:  # what `python -c` would make of it
            if stop.code not in (None, 0):
                return traceback.format_exc()
        except BaseException:  # report it and go on with the next block
            return traceback.format_exc()
    return None


def main() -> None:
    blocks_file, results_file = sys.argv[1], sys.argv[2]
    with open(results_file, "a", encoding="utf-8") as results:
        for block in json.loads(Path(blocks_file).read_text(encoding="utf-8")):
            error = _run(block["path"], block["cwd"])
            results.write(json.dumps({"where": block["where"], "error": error}) + "\n")
            results.flush()


if __name__ == "__main__":
    main()
