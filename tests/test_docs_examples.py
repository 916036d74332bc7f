"""Every Python code block in the README and docs runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
RUNNER = ROOT / "tests" / "tooling" / "doc_blocks.py"


def _pages() -> dict[str, list[str]]:
    return {
        str(path.relative_to(ROOT)): blocks
        for path in DOCS
        if (blocks := BLOCK.findall(path.read_text()))
    }


PAGES = _pages()


# One interpreter per page (tests/tooling/doc_blocks.py), each block a fresh __main__
# in its own directory: a fresh interpreter per block spent nearly all of this test's
# two CPU-minutes importing the engine and the frameworks again.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("page", list(PAGES))
def test_code_blocks_run(page: str, tmp_path: Path) -> None:
    blocks = []
    for i, code in enumerate(PAGES[page], start=1):
        source, cwd = tmp_path / f"block{i}.py", tmp_path / f"block{i}"
        source.write_text(code, encoding="utf-8")
        cwd.mkdir()
        blocks.append({"where": f"{page}#{i}", "path": str(source), "cwd": str(cwd)})
    (tmp_path / "blocks.json").write_text(json.dumps(blocks), encoding="utf-8")
    (tmp_path / "results.jsonl").touch()  # there even if the runner dies before its first block
    run = subprocess.run(
        [sys.executable, str(RUNNER), "blocks.json", "results.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, timeout=290,
    )  # fmt: skip
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    results = [json.loads(line) for line in lines]
    if run.returncode != 0:  # the first block without a result line is the one it died in
        died = blocks[len(results)]["where"] if len(results) < len(blocks) else "after the blocks"
        pytest.fail(f"the runner died in {died}:\n{run.stderr[-3000:]}")
    assert [r["where"] for r in results] == [b["where"] for b in blocks]
    failed = {r["where"]: r["error"][-3000:] for r in results if r["error"]}
    assert not failed, "\n".join(f"{where} failed:\n{error}" for where, error in failed.items())


def test_every_python_fence_is_a_block_that_runs() -> None:
    for path in DOCS:
        text = path.read_text()
        assert text.count("```python") == len(BLOCK.findall(text)), f"{path}: a fence BLOCK misses"


JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)


def test_json_blocks_parse() -> None:
    blocks = [block for path in DOCS for block in JSON_BLOCK.findall(path.read_text())]
    assert blocks, "the MCP how-to's client configuration is a JSON block"
    for block in blocks:
        json.loads(block)


def test_api_reference_covers_every_public_name() -> None:
    import embedmind

    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: embedmind\.(\w+)$", page, re.MULTILINE))
    public = {name for name in embedmind.__all__ if not name.startswith("_")}
    assert public - documented == set(), "add these names to docs/reference/api.md"
    assert documented - public == set(), "the API page documents names that are not public"
