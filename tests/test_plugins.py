"""Plugins: one test per hook, the documentation meta-test, and a real broken distribution."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import embedmind
from embedmind import hookspecs, plugins
from embedmind.embedders.hashing import HashingEmbedder
from embedmind.events import MemoryDeleted, MemoryForgotten, MemoryWritten
from embedmind.hookspecs import hookimpl
from embedmind.policies import FragmentPolicy

ROOT = Path(__file__).resolve().parents[1]
HOOKS = [
    "register_embedders",
    "register_chunkers",
    "register_adapters",
    "register_backends",
    "records_committed",
    "rerank",
]


@pytest.fixture
def registered() -> Iterator[list[object]]:
    added: list[object] = []
    yield added
    for plugin in added:
        plugins.unregister(plugin)


def _add(registered: list[object], plugin: object) -> None:
    plugins.register(plugin)
    registered.append(plugin)


def test_every_hookspec_is_documented_with_its_exact_signature() -> None:
    docs = (ROOT / "docs" / "reference" / "hookspecs.md").read_text()
    specs = [
        n
        for n, f in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(f, "embedmind_spec")
    ]
    assert sorted(specs) == sorted(HOOKS)
    for name in specs:
        signature = str(inspect.signature(getattr(hookspecs, name))).replace("'", "")
        assert f"`{name}{signature}`" in docs, name


def test_register_embedders(registered: list[object]) -> None:
    class Toy:
        @hookimpl
        def register_embedders(self, register: Any) -> None:
            register("toy-32", lambda: HashingEmbedder(32), aliases=("toy",))

    _add(registered, Toy())
    with embedmind.Store.open(":memory:", embedder="toy") as store:
        assert store.embedder is not None and store.embedder.dims == 32
    with pytest.raises(embedmind.InvalidInputError, match="no embedder named"):
        embedmind.Store.open(":memory:", embedder="nope")


def test_register_backends(registered: list[object], tmp_path: Path) -> None:
    # A URL is refused with the registered names until a backend claims its scheme;
    # the claiming factory is then the one Store.open asks (here it opens a SQLite
    # file, as a wrapper backend would), and plain paths stay with SQLite.
    with pytest.raises(embedmind.InvalidInputError, match=r"no storage backend.*sqlite"):
        embedmind.Store.open("toy://somewhere", embedder=None)
    from embedmind.backend.sqlite.backend import FACTORY
    from embedmind.backend.values import OpenOptions

    opened: list[str] = []

    class ToyFactory:
        name = "toy"
        schemes = ("toy",)

        def claims(self, location: str) -> bool:
            return location.startswith("toy://")

        def open(self, options: OpenOptions) -> Any:
            opened.append(options.location)
            target = str(tmp_path / options.location.removeprefix("toy://"))
            return FACTORY.open(OpenOptions(target, options.synchronous, options.busy_timeout))

    class Toy:
        @hookimpl
        def register_backends(self, register: Any) -> None:
            register("toy", ToyFactory())

    _add(registered, Toy())
    with embedmind.Store.open("toy://t.mind", embedder=None) as store:
        store.remember("through the toy backend")
        assert store.path == str(tmp_path / "t.mind")
    assert opened == ["toy://t.mind"]
    with embedmind.Store.open(tmp_path / "plain.mind", embedder=None) as store:
        assert store.path == str(tmp_path / "plain.mind")
    assert opened == ["toy://t.mind"]


def test_register_chunkers(registered: list[object]) -> None:
    class Halves:
        @hookimpl
        def register_chunkers(self, register: Any) -> None:
            register(
                "halves",
                lambda text, window, overlap: [(0, len(text) // 2), (len(text) // 2, len(text))],
            )

    _add(registered, Halves())
    policy = FragmentPolicy(chunker="halves")
    with embedmind.Store.open(
        ":memory:", embedder=HashingEmbedder(16), fragment_policy=policy
    ) as store:
        store.remember("abcdefgh", id="r")
        assert store.fragments.fragment_count == 2


def test_register_adapters(registered: list[object]) -> None:
    class Announce:
        @hookimpl
        def register_adapters(self, register: Any) -> None:
            register("test-adapter", framework="json", available=True, module="x")

    _add(registered, Announce())
    assert plugins.registry().adapters["test-adapter"]["framework"] == "json"


def test_records_committed_sees_commits_and_never_rollbacks(registered: list[object]) -> None:
    seen: list[Sequence[Any]] = []

    class Listener:
        @hookimpl
        def records_committed(self, store: Any, events: Sequence[Any]) -> None:
            seen.append(list(events))

    _add(registered, Listener())
    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember("one", id="a", namespace="n")
        store.forget("a")
        store.remember("two", id="b")
        store.delete("b")
        with pytest.raises(embedmind.ConflictError):
            store.remember("three", id="b0", namespace="x") and store.remember(
                "clash", id="b0", namespace="y"
            )
    flat = [e for batch in seen for e in batch]
    assert flat[:4] == [
        MemoryWritten("a", "n", "semantic"),
        MemoryForgotten("a"),
        MemoryWritten("b", "default", "semantic"),
        MemoryDeleted("b"),
    ]
    assert MemoryWritten("b0", "y", "semantic") not in flat  # the rolled-back write sent nothing


def test_events_are_made_only_for_a_listener(registered: list[object]) -> None:
    """Without a ``records_committed`` listener a commit builds no event; with one it does."""
    made: list[object] = []

    def counted() -> Iterator[object]:
        made.append(object())
        yield MemoryWritten("x", "default", "semantic")

    plugins.notify_committed(None, counted())
    assert made == [], "events were built for nobody"

    seen: list[Sequence[Any]] = []

    class Listener:
        @hookimpl
        def records_committed(self, store: Any, events: Sequence[Any]) -> None:
            seen.append(events)

    _add(registered, Listener())
    plugins.notify_committed(None, counted())
    assert len(made) == 1 and seen == [[MemoryWritten("x", "default", "semantic")]]


def test_rerank_is_first_result(registered: list[object]) -> None:
    class Reverse:
        @hookimpl
        def rerank(self, query: str, hits: Sequence[Any]) -> list[Any]:
            return list(reversed(hits))

    with embedmind.Store.open(":memory:", embedder=None) as store:
        store.remember_many(["tea tea tea", "tea and cake", "tea"])
        plain = store.recall("tea", mode="text").ids
        _add(registered, Reverse())
        reranked = store.recall("tea", mode="text")
        assert reranked.ids == list(reversed(plain))
        assert [h.rank for h in reranked] == [1, 2, 3]


CHILD = """
import json, sys, embedmind
from embedmind import plugins
loaded = sorted(m for m in sys.modules if m.startswith("toy_"))
registry = plugins.registry()
with embedmind.Store.open(":memory:", embedder="toy") as store:
    store.remember("it works")
print(json.dumps({"before": loaded, "loaded": registry.loaded, "failed": sorted(registry.failed),
                  "adapters": sorted(registry.adapters)}))
"""


def _child(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT / "tests" / "plugin_dist"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env, "PYTHONPATH": path},
    )  # fmt: skip


def test_a_broken_plugin_is_reported_and_the_working_one_loads() -> None:
    result = _child({})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["before"] == []  # nothing loads at import
    assert "good" in out["loaded"]  # installed adapters (e.g. langchain) load too
    assert out["failed"] == ["broken"]
    assert "toy-adapter" in out["adapters"]
    assert "broken on purpose" in result.stderr


def test_the_allow_list_loads_only_what_it_names() -> None:
    result = _child({"EMBEDMIND_LOAD_PLUGINS": "good"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["failed"] == []
    nothing = _child({"EMBEDMIND_LOAD_PLUGINS": ""})
    assert nothing.returncode != 0  # "toy" is not registered when no plugin loads
    assert "no embedder named 'toy'" in nothing.stderr
