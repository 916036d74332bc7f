"""Execute the notebooks in place and scrub their outputs so they can be committed.

Usage: .venv/bin/python scripts/execute_notebooks.py [notebooks/NAME.ipynb ...]

With no argument every ``notebooks/*.ipynb`` is run, top to bottom, in a fresh
``python3`` kernel of this interpreter (so run it with the project's venv), from
the ``notebooks/`` folder, as ``make test`` runs them with nbmake. A notebook is
written back only when every cell ran; the script exits non-zero when a cell
fails or writes to stderr (warnings belong nowhere in committed outputs).

What the scrub does, so that re-running it changes only what really changed:

- drops per-cell execution timestamps, the kernel's Python patch version and
  the saved widget state (tqdm bars keep their values and timings there);
- replaces each tqdm widget by one text line of its final state, without the
  elapsed time and rate (a bar closed with ``leave=False`` is dropped, as it
  disappears in Jupyter too);
- replaces machine paths (the repository, the temporary folder, the home
  folder, ``/work``, ``/tmp``, ``/root``, ``/home/...``) by ``…/<last part>``.

Execution counts are kept: a fresh top-to-bottom run numbers cells 1..n, which
shows a reader the notebook ran in order. Timings that are the point (the
benchmark tables and plots of ``05_benchmarks``) stay; any other notebook must
print stable things. ``tests/test_notebooks_clean.py`` checks the result.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TQDM_TIMING = re.compile(r"\s*\[[^\]]*\]\s*$")  # "[00:01<00:00, 3.2it/s]"
BAR_WIDTH = 10


class _Client(NotebookClient):
    """A client that also remembers which widgets were closed."""

    def __init__(self, nb: Any, **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        self.closed: set[str] = set()

    def handle_comm_msg(self, outs: Any, msg: dict[str, Any], cell_index: int) -> None:
        """Record comm closes, then let nbclient keep the widget state."""
        if msg["msg_type"] == "comm_close":
            self.closed.add(msg["content"]["comm_id"])
        super().handle_comm_msg(outs, msg, cell_index)


def _path_pattern() -> re.Pattern[str]:
    """Match an absolute path under any root a machine path may start with."""
    roots = {str(ROOT), tempfile.gettempdir(), str(Path.home()), sys.prefix}
    roots |= {str(Path(r).resolve()) for r in roots}
    generic = [r"/work", r"/tmp", r"/root", r"/home/[^/\s'\"]+", r"/Users/[^/\s'\"]+"]
    alternatives = sorted((re.escape(r) for r in roots if len(r) > 1), key=len, reverse=True)
    return re.compile("(?:" + "|".join([*alternatives, *generic]) + r")(?:/[^\s'\"()<>\[\],]*)?")


PATHS = _path_pattern()


def scrub_text(text: str) -> str:
    """Replace every machine path in ``text`` by ``…/<its last part>``."""

    def short(match: re.Match[str]) -> str:
        name = match.group(0).rstrip("/").rsplit("/", 1)[-1]
        return f"…/{name}"

    return PATHS.sub(short, text)


def _tqdm_line(model_id: str, state: dict[str, Any]) -> str | None:
    """Render a tqdm HBox widget's final state as text, or ``None`` if it is not one."""
    box = state.get(model_id, {}).get("state", {})
    children = [c.removeprefix("IPY_MODEL_") for c in box.get("children", [])]
    if box.get("_model_name") != "HBoxModel" or len(children) != 3:
        return None
    left, bar, right = (state.get(c, {}).get("state", {}) for c in children)
    if bar.get("_model_name") != "FloatProgressModel":
        return None
    filled = round(BAR_WIDTH * bar.get("value", 0) / (bar.get("max") or 1))
    drawn = "█" * min(filled, BAR_WIDTH) + " " * max(BAR_WIDTH - filled, 0)
    texts = (html.unescape(t.get("value", "")).replace("\u2007", " ") for t in (left, right))
    desc, counts = texts
    return f"{desc}|{drawn}| {TQDM_TIMING.sub('', counts).strip()}".strip()


def _widget_output(output: Any, state: dict[str, Any], closed: set[str]) -> Any | None:
    """Turn a widget display into a stdout line (tqdm) or its text; drop closed ones."""
    model_id = output["data"][WIDGET_VIEW]["model_id"]
    if model_id in closed:
        return None
    line = _tqdm_line(model_id, state)
    if line is None:
        del output["data"][WIDGET_VIEW]
        return output
    return nbformat.v4.new_output("stream", name="stdout", text=line + "\n")


def _scrub_output(output: Any) -> None:
    """Remove machine paths from an output's text in place."""
    if "text" in output:
        output["text"] = scrub_text(output["text"])
    if "traceback" in output:
        output["traceback"] = [scrub_text(line) for line in output["traceback"]]
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/") and isinstance(value, str):
            output["data"][mime] = scrub_text(value)
    output.get("metadata", {}).pop("execution", None)


def _merge_streams(outputs: list[Any]) -> list[Any]:
    """Join consecutive stream outputs of the same name, as Jupyter shows them."""
    merged: list[Any] = []
    for output in outputs:
        last = merged[-1] if merged else None
        same = last is not None and output["output_type"] == last["output_type"] == "stream"
        if same and output["name"] == last["name"]:
            last["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def scrub(nb: Any, closed: set[str]) -> None:
    """Make an executed notebook's outputs stable and free of machine paths, in place."""
    widgets = nb.metadata.pop("widgets", {})
    state = widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    nb.metadata.get("language_info", {}).pop("version", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in cell.outputs:
            if WIDGET_VIEW in output.get("data", {}):
                output = _widget_output(output, state, closed)
            if output is not None:
                _scrub_output(output)
                outputs.append(output)
        cell.outputs = _merge_streams(outputs)


def _complaints(nb: Any) -> list[str]:
    """What must not be committed: stderr output (warnings, stray logs)."""
    found = []
    for number, cell in enumerate(nb.cells, 1):
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream" and output["name"] == "stderr":
                found.append(f"cell {number} wrote to stderr: {output['text'][:300]!r}")
    return found


def execute(path: Path, *, timeout: int) -> list[str]:
    """Execute one notebook, scrub it and write it back; return what went wrong."""
    nb = nbformat.read(path, as_version=4)
    client = _Client(
        nb,
        timeout=timeout,
        kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as e:
        return [scrub_text(str(e))]
    scrub(nb, client.closed)
    problems = _complaints(nb)
    if not problems:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return problems


def main(argv: list[str] | None = None) -> int:
    """Run the notebooks named on the command line (default: all), report, exit 0/1."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (900)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    failed = 0
    for path in paths:
        began = time.perf_counter()
        problems = execute(path, timeout=args.timeout)
        verdict = "FAILED, not written" if problems else "written"
        print(f"{path.name}: {verdict} ({time.perf_counter() - began:.0f} s)", flush=True)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
