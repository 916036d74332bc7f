"""Nothing the engine reads can run code (RELIABILITY S2).

Two halves. A static scan parses every ``.py`` of the engine and the adapters
with :mod:`ast` (so aliases like ``import pickle as p`` and ``from numpy import
load`` are resolved, and comments or strings never count) and fails on any
unpickling or code-evaluating call: ``pickle``/``marshal``/``shelve`` and their
relatives, ``eval``/``exec``, ``np.load(allow_pickle=True)``, ``yaml.load``
without a safe loader, ``torch.load`` without ``weights_only=True``. The
scanner is itself checked against a table of snippets it must flag and must
pass. Then live payloads: a pickle whose ``__reduce__`` creates a marker file
is written into every BLOB column of the schema (found from the schema, so a
new column is covered automatically) and into the index files (with the
registry updated to match, so the bytes really reach the loader); a child
process opens each store and runs every read path. The marker must never
appear, the child must never die by a signal, and each call either works
(a rebuild is fine) or raises a typed :class:`~embedmind.EmbedmindError`.
"""

from __future__ import annotations

import ast
import io
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import pytest

import embedmind
from embedmind.backend.sqlite import vector_rows
from embedmind.backend.sqlite.fileio import checksum_bytes
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

REPO = Path(__file__).resolve().parents[2]
SKIPPED_DIRECTORIES = {"__pycache__", "build", "dist", ".venv"}

# -- the static scan ------------------------------------------------------------------------

UNSAFE_MODULES = {
    "pickle": "unpickling runs arbitrary code",
    "_pickle": "unpickling runs arbitrary code",
    "cPickle": "unpickling runs arbitrary code",
    "cloudpickle": "unpickling runs arbitrary code",
    "dill": "unpickling runs arbitrary code",
    "jsonpickle": "unpickling runs arbitrary code",
    "joblib": "joblib.load unpickles",
    "marshal": "marshal loads code objects",
    "shelve": "shelve is pickle underneath",
}
UNSAFE_CALLS = {
    "eval": "evaluates code",
    "exec": "executes code",
    "builtins.eval": "evaluates code",
    "builtins.exec": "executes code",
    "yaml.unsafe_load": "constructs arbitrary objects",
    "yaml.unsafe_load_all": "constructs arbitrary objects",
    "yaml.full_load": "constructs Python objects",
    "yaml.full_load_all": "constructs Python objects",
    "pandas.read_pickle": "unpickles",
    "numpy.lib.format.read_array": "unpickles object arrays when allowed",
}
SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}
IMPORTERS = {"importlib.import_module", "__import__"}


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the fully qualified name it was imported as (anywhere in the module)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _resolve(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    full = aliases.get(head, head)
    full = {"np": "numpy", "pd": "pandas"}.get(full, full)
    return f"{full}.{rest}" if rest else full


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_true(node: ast.expr | None) -> bool:
    """Anything but a literal False/None/absent counts as true (a variable might be True)."""
    if node is None:
        return False
    return not (isinstance(node, ast.Constant) and node.value in (False, None))


def _unsafe_module(name: str) -> str | None:
    return UNSAFE_MODULES.get(name.split(".")[0])


def scan_source(source: str, filename: str = "<snippet>") -> list[str]:
    """Every unsafe deserialisation or code evaluation in ``source``, as ``file:line: why``."""
    tree = ast.parse(source, filename)
    aliases = _aliases(tree)
    found: list[str] = []

    def flag(node: ast.AST, why: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', 0)}: {why}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if reason := _unsafe_module(alias.name):
                    flag(node, f"imports {alias.name}: {reason}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if reason := _unsafe_module(node.module):
                flag(node, f"imports from {node.module}: {reason}")
        elif isinstance(node, ast.Call):
            dotted = _dotted(node.func)
            if dotted is None:
                continue
            name = _resolve(dotted, aliases)
            if name in UNSAFE_CALLS:
                flag(node, f"calls {name}: {UNSAFE_CALLS[name]}")
            elif name in IMPORTERS and node.args:
                # Plugins are imported by computed names (entry points); a literal
                # unsafe module name is the only thing to catch here.
                target = node.args[0]
                module = target.value if isinstance(target, ast.Constant) else None
                if isinstance(module, str) and (reason := _unsafe_module(module)):
                    flag(node, f"imports {module} dynamically: {reason}")
            elif name in ("yaml.load", "yaml.load_all"):
                loader = _keyword(node, "Loader") or (node.args[1] if len(node.args) > 1 else None)
                loader_name = _dotted(loader) if loader is not None else None
                if loader_name is None or loader_name.split(".")[-1] not in SAFE_YAML_LOADERS:
                    flag(node, f"calls {name} without a safe loader")
            elif name == "torch.load":
                weights_only = _keyword(node, "weights_only")
                if not (isinstance(weights_only, ast.Constant) and weights_only.value is True):
                    flag(node, "calls torch.load without weights_only=True")
            if _is_true(_keyword(node, "allow_pickle")):
                flag(node, f"calls {name} with allow_pickle")
            if _is_true(_keyword(node, "allow_dangerous_deserialization")):
                flag(node, f"calls {name} with allow_dangerous_deserialization")
    return found


def _sources() -> list[Path]:
    roots = [REPO / "embedmind", *sorted(p for p in (REPO / "adapters").iterdir() if p.is_dir())]
    files = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            parts = set(path.relative_to(REPO).parts)
            if parts & SKIPPED_DIRECTORIES or any(p.endswith(".egg-info") for p in parts):
                continue
            files.append(path)
    return files


SCANNER_TABLE: list[tuple[str, bool]] = [
    ("import pickle", True),
    ("import pickle as p\np.loads(b'')", True),
    ("from pickle import loads as l\nl(b'')", True),
    ("import _pickle", True),
    ("import marshal", True),
    ("import shelve\nshelve.open('x')", True),
    ("import dill", True),
    ("from joblib import load", True),
    ("eval('1')", True),
    ("exec('x = 1')", True),
    ("import builtins\nbuiltins.eval('1')", True),
    ("import importlib\nimportlib.import_module('pickle')", True),
    ("__import__('marshal')", True),
    ("import numpy as np\nnp.load('f', allow_pickle=True)", True),
    ("import numpy\nnumpy.load('f', allow_pickle=flag)", True),
    ("from numpy import load\nload('f', allow_pickle=True)", True),
    ("import yaml\nyaml.load(s)", True),
    ("import yaml\nyaml.load(s, Loader=yaml.Loader)", True),
    ("import yaml\nyaml.load(s, yaml.FullLoader)", True),
    ("import yaml\nyaml.unsafe_load(s)", True),
    ("import torch\ntorch.load('w.pt')", True),
    ("import torch\ntorch.load('w.pt', weights_only=False)", True),
    ("import pandas as pd\npd.read_pickle('x')", True),
    ("FAISS.load_local('d', e, allow_dangerous_deserialization=True)", True),
    # Must pass: safe forms, and mere mentions.
    ("import numpy as np\nnp.load('f')", False),
    ("import numpy as np\nnp.load('f', allow_pickle=False)", False),
    ("import yaml\nyaml.safe_load(s)", False),
    ("import yaml\nyaml.load(s, Loader=yaml.SafeLoader)", False),
    ("import yaml\nyaml.load(s, yaml.CSafeLoader)", False),
    ("import torch\ntorch.load('w.pt', weights_only=True)", False),
    ("import json\njson.loads(s)", False),
    ("import importlib\nimportlib.import_module('onnxruntime')", False),
    ("import importlib\nimportlib.import_module(entry_point_name)", False),
    ("text = 'pickle.loads(eval(x))'  # eval, exec, pickle in a comment", False),
    ("def evaluate(x):\n    return x.eval()", False),
    ("import ast\nast.literal_eval('1')", False),
]


@pytest.mark.parametrize(("source", "unsafe"), SCANNER_TABLE)
def test_the_scanner_flags_exactly_the_unsafe_forms(
    source: str, unsafe: bool, figures: Figures
) -> None:
    # Guards the scan below: it must be able to fail, and not on safe code.
    found = scan_source(source)
    figures(cases=1, leaks=int(unsafe and not found))
    assert bool(found) is unsafe, found


def test_engine_and_adapters_never_deserialise_unsafely(figures: Figures) -> None:
    files = _sources()
    # The scan must see the engine, both adapters and their plugins, or it proves nothing.
    names = {str(p.relative_to(REPO)) for p in files}
    assert "embedmind/store.py" in names
    assert "embedmind/backend/sqlite/hnsw.py" in names
    assert any(n.startswith("adapters/langchain/") for n in names)
    assert any(n.startswith("adapters/llamaindex/") for n in names)
    findings = [
        f
        for path in files
        for f in scan_source(path.read_text("utf-8"), str(path.relative_to(REPO)))
    ]
    figures(cases=len(files), leaks=len(findings))
    assert not findings, "\n".join(findings)


# -- planted payloads ---------------------------------------------------------------------------


class Payload:
    """Unpickling this creates ``marker``: the proof that a pickle was loaded."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


def _payload(marker: Path, protocol: int) -> bytes:
    return pickle.dumps(Payload(str(marker)), protocol=protocol)


def test_the_payload_is_live(tmp_path: Path, figures: Figures) -> None:
    # Guards the test below: these bytes really run code when unpickled.
    marker = tmp_path / "marker"
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        marker.unlink(missing_ok=True)
        handle = pickle.loads(_payload(marker, protocol))  # the point of the test
        handle.close()
        assert marker.exists(), protocol
    figures(cases=pickle.HIGHEST_PROTOCOL + 1, leaks=0)


def _blob_columns(path: Path) -> list[tuple[str, str]]:
    conn = apsw.Connection(str(path))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            (table, str(column[1]))
            for table in tables
            for column in conn.execute(f"PRAGMA table_info({table})")
            if str(column[2]).upper() == "BLOB"
        ]
    finally:
        conn.close()


def _build(directory: Path) -> Path:
    directory.mkdir()
    path = directory / "s.mind"
    with embedmind.Store.open(path, embedder=HashingEmbedder(16)) as store:
        store.remember("apple orchard river", id="a", entities=["fruit"])
        store.remember("apple boat on the river", id="b", relations=[("near", "a")])
        store.remember("pear tree", id="c", supersedes=[], tags=["t"])
        store.remember("pear tree in bloom", id="d", supersedes=["c"])
        store.fragments.put("a", [((0, 5), "apple"), ((6, 13), "orchard")])
    return path


def _plant(base: Path, case: Path, target: str, payload: bytes) -> Path:
    shutil.copytree(base.parent, case)
    path = case / base.name
    conn = apsw.Connection(str(path))
    try:
        if target.startswith("file:"):
            index_name, suffix, log = target.removeprefix("file:").split("|")
            (case / (base.name + suffix)).write_bytes(payload)
            # Register the planted file as current and intact, so its bytes reach the loader.
            conn.execute(
                "INSERT OR REPLACE INTO index_files (name, seq, checksum, size) VALUES "
                "(?, (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = ?), ?, ?)",
                (index_name, log, checksum_bytes(payload), len(payload)),
            )
        elif target == "file-unregistered":
            (case / (base.name + "-vectors")).write_bytes(payload)
        else:
            for column in target.split("+"):
                table, name = column.split(".")
                conn.execute(f"UPDATE {table} SET {name} = ?", (payload,))
    finally:
        conn.close()
    return path


CHILD = r"""
import io, json, sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder

def attempt(call):
    try:
        value = call()
        return "ok " + str(value)[:60]
    except embedmind.EmbedmindError as e:
        return f"typed {type(e).__name__}: {str(e)[:80]}"
    except Exception as e:
        return f"untyped {type(e).__name__}: {str(e)[:160]}"

results = {}
for path in json.loads(sys.argv[1]):
    got = {}
    store = None
    def open_store():
        global store
        store = embedmind.Store.open(path, embedder=HashingEmbedder(16))
        return store
    got["open"] = attempt(open_store)
    if store is not None:
        s = store
        calls = {
            "recall text": lambda: s.recall("apple river", mode="text").ids,
            "recall vector": lambda: s.recall("apple river", mode="vector").ids,
            "recall hybrid": lambda: s.recall("apple river", expand_related=True).ids,
            "recall rerank": lambda: s.recall("apple river", rerank_alpha=0.5).ids,
            "get": lambda: s.get("a").id,
            "get_many": lambda: [m.id for m in s.get_many(["a", "b", "c", "d"])],
            "vectors": lambda: sorted(s.vectors(["a", "b"])),
            "iter": lambda: [m.id for m in s.iter(include_superseded=True)],
            "export": lambda: s.export_jsonl(io.StringIO(), include_vectors=True),
            "fragments": lambda: [h.record_id for h in s.fragments.query("apple")],
            "related": lambda: [r.memory.id for r in s.related("a")],
            "lineage": lambda: [m.id for m in s.lineage("d").older],
            "entities": lambda: [m.id for m in s.entity_members("fruit")],
            "stats": lambda: s.stats().live,
            "remember": lambda: s.remember("apple pie", id="e").id,
            "forget": lambda: s.forget("b"),
            "redact": lambda: s.redact("a", "plain words").id,
            "vacuum": lambda: s.vacuum().__class__.__name__,
        }
        for name, call in calls.items():
            got[name] = attempt(call)
        got["close"] = attempt(s.close)
    results[path] = got
print(json.dumps(results))
"""


@pytest.mark.timeout(180)
def test_planted_pickles_never_run(tmp_path: Path, figures: Figures) -> None:
    base = _build(tmp_path / "base")
    columns = _blob_columns(base)
    # Schema discovery sanity: the vector and posting blobs must be among them.
    assert {("vectors", "data"), ("fragments", "data"), ("lex_blocks", "data")} <= set(columns)
    targets = [f"{table}.{column}" for table, column in columns]
    targets.append("+".join(targets))  # every blob at once
    targets += [
        f"file:{vector_rows.MEMORY.index_name}|-vectors|{vector_rows.MEMORY.log}",
        f"file:{vector_rows.FRAGMENTS.index_name}|-fragments|{vector_rows.FRAGMENTS.log}",
        "file-unregistered",
    ]
    markers = []
    paths = []
    for i, target in enumerate(targets):
        for protocol in (0, 2, pickle.HIGHEST_PROTOCOL):
            marker = tmp_path / f"MARKER-{i}-{protocol}"
            markers.append(marker)
            paths.append(
                str(
                    _plant(
                        base, tmp_path / f"case-{i}-{protocol}", target, _payload(marker, protocol)
                    )
                )
            )
    result = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(paths)],
        capture_output=True,
        text=True,
        timeout=170,
    )
    # A negative return code is death by a signal: a crash in a native loader.
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])
    outcomes = json.loads(result.stdout)
    ran = [m.name for m in markers if m.exists()]
    untyped = {
        (path, call): outcome
        for path, calls in outcomes.items()
        for call, outcome in calls.items()
        if outcome.startswith("untyped")
    }
    figures(cases=len(paths), leaks=len(ran), calls=sum(len(c) for c in outcomes.values()))
    assert not ran, f"a planted pickle was loaded: {ran}"
    assert not untyped, json.dumps({f"{p} {c}": o for (p, c), o in untyped.items()}, indent=1)


def test_an_export_carries_no_pickle(tmp_path: Path, figures: Figures) -> None:
    # The export format is JSON lines; importing a line that holds a pickle is data, not code.
    marker = tmp_path / "MARKER"
    metadata = {"blob": _payload(marker, 0).decode("latin-1")}
    with embedmind.Store.open(tmp_path / "s.mind", embedder=HashingEmbedder(16)) as store:
        store.remember(metadata["blob"], id="a", metadata=metadata)
        out = io.StringIO()
        store.export_jsonl(out, include_vectors=True)
    with embedmind.Store.open(tmp_path / "t.mind", embedder=HashingEmbedder(16)) as other:
        other.import_jsonl(io.StringIO(out.getvalue()))
        copied = other.get("a")
        assert copied is not None
        assert copied.metadata == metadata
        assert copied.content == metadata["blob"]
    assert not marker.exists()
    figures(cases=1, leaks=0)
