"""The committed notebooks are executed, and their outputs hold nothing machine-specific.

They are refreshed with ``scripts/execute_notebooks.py``; ``make test`` also runs
them with nbmake (which does not write outputs back).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MACHINE_PATHS = ("/work/", "/tmp/", "/root/", "/home/", "/Users/")
# What a tqdm bar prints after its counts: "[00:01<00:00, 3.20it/s]".
TQDM_TIMING = re.compile(r"\d\d:\d\d<|\d(?:it|memory|fragment)/s\]")
WARNING = re.compile(r"\b\w*Warning\b|\bWARNING\b")


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _code_cells(path: Path) -> list[dict[str, Any]]:
    return [c for c in _load(path)["cells"] if c["cell_type"] == "code"]


def _output_text(output: dict[str, Any]) -> str:
    parts = [output.get("text", "")]
    parts += output.get("traceback", [])
    parts += [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return "".join("".join(p) if isinstance(p, list) else p for p in parts)


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "execute_notebooks", ROOT / "scripts" / "execute_notebooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_code_cell_ran_in_order_and_has_output(path: Path) -> None:
    cells = _code_cells(path)
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name} is not executed top to bottom (counts {counts}): "
        "run scripts/execute_notebooks.py"
    )
    empty = [i for i, c in enumerate(cells, 1) if not c["outputs"]]
    assert not empty, f"{path.name}: code cells {empty} show nothing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_machine_path_anywhere(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [p for p in MACHINE_PATHS if p in text]
    assert not found, f"{path.name} contains {found}: run scripts/execute_notebooks.py"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_outputs_hold_no_error_warning_timestamp_or_widget(path: Path) -> None:
    nb = _load(path)
    assert "widgets" not in nb["metadata"], "saved widget state (it holds tqdm timings)"
    assert "version" not in nb["metadata"].get("language_info", {})
    for number, cell in enumerate(_code_cells(path), 1):
        assert "execution" not in cell["metadata"], f"cell {number}: execution timestamps"
        for output in cell["outputs"]:
            where = f"{path.name} code cell {number}"
            assert output["output_type"] != "error", where
            assert output.get("name") != "stderr", f"{where} wrote to stderr"
            assert not any("widget" in mime for mime in output.get("data", {})), where
            text = _output_text(output)
            assert not WARNING.search(text), f"{where} shows a warning: {text[:200]!r}"
            if path.name != "05_benchmarks.ipynb":
                assert not TQDM_TIMING.search(text), f"{where} shows a progress timing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_plot_is_a_small_png_with_a_title(path: Path) -> None:
    for number, cell in enumerate(_code_cells(path), 1):
        images = [o for o in cell["outputs"] if "image/png" in o.get("data", {})]
        other = [m for o in cell["outputs"] for m in o.get("data", {}) if m.startswith("image/")]
        assert set(other) <= {"image/png"}, f"cell {number}: {other}"
        if images:
            source = "".join(cell["source"])
            assert source.count("set_title(") >= len(images), f"cell {number}: a plot lacks a title"
        for image in images:
            assert len(image["data"]["image/png"]) < 150_000, f"cell {number}: image too large"


def test_committed_notebooks_are_small() -> None:
    assert sum(p.stat().st_size for p in NOTEBOOKS) < 1_000_000


def test_scrub_shortens_machine_paths() -> None:
    script = _script()
    text = "saved to /tmp/tmpa1b2/life.mind and read /work/shared/data/locomo-dev.json\n"
    assert script.scrub_text(text) == "saved to …/life.mind and read …/locomo-dev.json\n"
    assert script.scrub_text(f"{script.ROOT}/notebooks") == "…/notebooks"
    assert script.scrub_text("user/alice 3/4 done") == "user/alice 3/4 done"


def test_scrub_turns_tqdm_widgets_into_their_final_line() -> None:
    script = _script()
    state = {
        "box": {
            "state": {
                "_model_name": "HBoxModel",
                "children": ["IPY_MODEL_l", "IPY_MODEL_b", "IPY_MODEL_r"],
            }
        },
        "l": {"state": {"_model_name": "HTMLModel", "value": "fill\u20071,000:\u2007100%"}},
        "b": {"state": {"_model_name": "FloatProgressModel", "value": 1000, "max": 1000}},
        "r": {
            "state": {
                "_model_name": "HTMLModel",
                "value": "\u20071000/1000\u2007[00:01&lt;00:00,\u2007950.2it/s]",
            }
        },
    }
    widget = "application/vnd.jupyter.widget-view+json"
    cell = {
        "cell_type": "code",
        "metadata": {"execution": {"iopub.status.busy": "2026-01-01T00:00:00Z"}},
        "outputs": [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/plain": "0%", widget: {"model_id": "box"}},
            },
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/plain": "0%", widget: {"model_id": "gone"}},
            },
        ],
    }
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.from_dict(
        {
            "cells": [cell],
            "metadata": {
                "widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}},
                "language_info": {"name": "python", "version": "3.11.7"},
            },
        }
    )
    script.scrub(nb, closed={"gone"})
    assert nb.cells[0].outputs == [
        {
            "output_type": "stream",
            "name": "stdout",
            "text": "fill 1,000: 100%|██████████| 1000/1000\n",
        }
    ]
    assert nb.cells[0].metadata == {}
    assert nb.metadata == {"language_info": {"name": "python"}}
