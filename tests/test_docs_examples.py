"""Every Python code block in the README and docs runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for i, code in enumerate(BLOCK.findall(path.read_text())):
            found.append((f"{path.relative_to(ROOT)}#{i + 1}", code))
    return found


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_code_block_runs(where: str, code: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=170
    )
    assert result.returncode == 0, f"{where} failed:\n{result.stderr[-3000:]}"


JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)


def test_json_blocks_parse() -> None:
    import json

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
