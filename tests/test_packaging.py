"""The four pyprojects agree with each other and with the README's Install section.

`make check-dist` (scripts/check_dist.py) proves the install lines by running them;
these checks are the static half, fast enough for every `pytest` run.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = [ROOT / "adapters" / "langchain", ROOT / "adapters" / "llamaindex"]
BENCH = ROOT / "bench"
PROJECTS = [ROOT, *ADAPTERS, BENCH]
REQUIREMENT = re.compile(r"^([A-Za-z0-9._-]+)(?:\[([^\]]*)\])?\s*(.*)$")


def _pyproject(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    return data


def _parse(requirement: str) -> tuple[str, set[str], str]:
    match = REQUIREMENT.match(requirement)
    assert match, requirement
    name, extras, spec = match.groups()
    return name, {e.strip() for e in (extras or "").split(",") if e.strip()}, spec


def _check_dist() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_dist", ROOT / "scripts" / "check_dist.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_dist", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("project", PROJECTS, ids=["engine", "langchain", "llamaindex", "bench"])
def test_license_is_an_spdx_string_with_a_backend_that_reads_it(project: Path) -> None:
    # A TOML-table license made setuptools print ~400 deprecation warnings per install.
    data = _pyproject(project)
    assert data["project"]["license"] == "Apache-2.0"
    floors = [
        int(m.group(1))
        for r in data["build-system"]["requires"]
        if (m := re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", r))
    ]
    assert floors and floors[0] >= 77, "SPDX license strings need setuptools 77"


def test_root_extras_name_real_adapter_distributions_and_extras() -> None:
    root = _pyproject(ROOT)
    adapters = {}
    for adapter in ADAPTERS:
        project = _pyproject(adapter)["project"]
        adapters[project["name"]] = set(project.get("optional-dependencies", {}))
    extras = root["project"]["optional-dependencies"]
    dev_pins = {_parse(r)[0]: r for r in extras["dev"]}
    for extra, requirements in extras.items():
        if extra == "dev":
            continue
        for requirement in requirements:
            name, wanted, _ = _parse(requirement)
            if name in adapters:
                assert wanted <= adapters[name], f"{extra}: {name} has no extra {wanted}"
            else:  # a third-party integration: pinned as the dev tools test it
                assert dev_pins.get(name) == requirement, f"{extra}: {requirement} vs dev"
    assert {"langchain", "langgraph", "llamaindex", "mcp", "all"} <= set(extras)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda p: p.name)
def test_adapters_accept_this_engine_version(adapter: Path) -> None:
    version = tuple(int(x) for x in _pyproject(ROOT)["project"]["version"].split("."))
    engine = [_parse(r) for r in _pyproject(adapter)["project"]["dependencies"]]
    (spec,) = [s for name, _, s in engine if name == "embedmind"]
    floor = tuple(int(x) for x in re.fullmatch(r">=([\d.]+)", spec).group(1).split("."))  # type: ignore[union-attr]
    assert floor <= version


def test_benchmarks_are_their_own_distribution_written_for_this_engine() -> None:
    root = _pyproject(ROOT)["project"]
    bench = _pyproject(BENCH)["project"]
    assert "bench" not in root["optional-dependencies"], "the peers belong to embedmind-bench"
    # It reaches into the engine's channels, so it names this one release exactly.
    engine = [spec for name, _, spec in map(_parse, bench["dependencies"]) if name == "embedmind"]
    assert engine == [f"=={root['version']}"]
    peers = [_parse(r) for r in bench["optional-dependencies"]["peers"]]
    assert {"tantivy", "bm25s", "chromadb", "lancedb", "hnswlib", "faiss-cpu"} <= {
        name for name, _, _ in peers
    }
    assert all(re.fullmatch(r"==[\d.]+", spec) for _, _, spec in peers), peers
    dev_pins = {_parse(r)[0]: r for r in root["optional-dependencies"]["dev"]}
    for requirement in bench["optional-dependencies"]["test"]:  # the engine's tools, same pins
        assert dev_pins.get(_parse(requirement)[0]) == requirement, requirement
    # The engine's package list must not sweep bench/embedmind_bench in.
    assert "embedmind*" not in _pyproject(ROOT)["tool"]["setuptools"]["packages"]["find"]["include"]


def test_readme_install_lines_cover_every_integration_and_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# embedmind\n\n```sh\nmake demo"), "make demo/test stay first"
    lines = _check_dist().install_lines()
    said = {w for words in lines for w in re.findall(r"[a-z]+", " ".join(words))}
    assert {"mcp", "langchain", "langgraph", "llamaindex"} <= said
    assert ["pip", "install", "."] in lines, "the engine alone"
    assert ["pip", "install", ".", "./bench"] in lines, "the benchmarks"
    folders = [t for words in lines for t in words[2:] if t.startswith(".")]
    for target in folders:  # "." or "./adapters/langchain[langgraph]": a folder of the clone
        path, extras = re.fullmatch(r"(\.[^\[]*)(?:\[(.*)\])?", target).groups()  # type: ignore[union-attr]
        assert (ROOT / path / "pyproject.toml").is_file(), target
        offered = set(_pyproject(ROOT / path)["project"].get("optional-dependencies", {}))
        assert set(filter(None, (extras or "").split(","))) <= offered, target


def test_probe_promises_follow_the_words_of_a_line() -> None:
    probe = _check_dist().probe
    assert "'langchain_embedmind'" in probe(["pip", "install", ".", "./adapters/langchain"])
    # The engine alone must not pull in a framework ("install" contains "all").
    assert "the engine alone installed" in probe(["pip", "install", "."])
    assert "'langchain_core', 'langgraph'" in probe(["pip", "install", "."])
    assert "'embedmind_bench'" in probe(["pip", "install", "."]), (
        "the engine alone has no benchmarks"
    )
    assert "'embedmind_bench.cli'" in probe(["pip", "install", ".", "./bench"])
    assert "embedmind_bench" not in probe(["pip", "install", "embedmind[all]"])


def test_dev_extra_draws_tqdm_widgets_in_notebooks() -> None:
    dev = {_parse(r)[0] for r in _pyproject(ROOT)["project"]["optional-dependencies"]["dev"]}
    assert "ipywidgets" in dev
