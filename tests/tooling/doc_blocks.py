"""Run a page's Python code blocks one after another in this interpreter.

Usage: python doc_blocks.py BLOCKS.json RESULTS.json

``BLOCKS.json`` is a list of ``{"where": ..., "code": ..., "cwd": ...}``. Each block
runs as a fresh ``__main__`` module in its own empty directory, the way ``python -c``
would run it, but the page pays for the interpreter and its imports (the engine,
LangChain, LlamaIndex: seconds each) once instead of once per block. What a block
could leave behind for the next one is put back after it: the working directory,
``sys.argv``, ``sys.path``, the environment and the warning filters. Writes one
``{"where": ..., "error": traceback-or-null}`` per block to ``RESULTS.json``; a
failing block does not stop the ones after it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import traceback
import types
import warnings
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def _as_main(cwd: str) -> Iterator[types.ModuleType]:
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = __builtins__
    saved_main, saved_argv, saved_path = sys.modules["__main__"], sys.argv, list(sys.path)
    saved_environ, saved_cwd = dict(os.environ), os.getcwd()
    sys.modules["__main__"], sys.argv, sys.path[0] = module, ["-c"], ""  # as `python -c` has them
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():
            yield module
    finally:
        sys.modules["__main__"], sys.argv, sys.path[:] = saved_main, saved_argv, saved_path
        os.environ.clear()
        os.environ.update(saved_environ)
        os.chdir(saved_cwd)
        gc.collect()  # stores a block left open close their files before the next one runs


def _run(where: str, code: str, cwd: str) -> str | None:
    with _as_main(cwd) as module:
        try:
            exec(compile(code, where, "exec"), module.__dict__)
        except SystemExit as stop:  # what `python -c` would make of it
            if stop.code not in (None, 0):
                return traceback.format_exc()
        except BaseException:  # report it and go on with the next block
            return traceback.format_exc()
    return None


def main() -> None:
    blocks_file, results_file = sys.argv[1], sys.argv[2]
    blocks = json.loads(Path(blocks_file).read_text(encoding="utf-8"))
    results = []
    for block in blocks:
        print(f"--- {block['where']}", flush=True)
        error = _run(block["where"], block["code"], block["cwd"])
        sys.stdout.flush()
        sys.stderr.flush()
        results.append({"where": block["where"], "error": error})
    Path(results_file).write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    main()
