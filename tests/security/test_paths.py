"""Store paths and namespaces never escape the store's directory (RELIABILITY S1).

A store path is taken literally: no ``file:`` URI parsing, no ``~`` or
``$VAR`` expansion, no ``:memory:`` lookalikes. Every case of the table is
either rejected with :class:`~embedmind.InvalidInputError` having created
nothing, or opens the one file the path names, with every file the engine
makes (WAL, SHM, lock files, index files) beside it and named after it; the
whole temporary tree is compared before and after, so a file anywhere else is
caught. Namespaces are data, never file names: hostile ones are rejected or
stored as given, and NFC and NFD spellings of one name are one namespace on
every path. Symlinks planted at every name the engine creates (including the
temporary names of index saves) must not be followed out of the directory,
and every file the engine creates is private (``0600``) even under
``umask 0``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import embedmind
from embedmind import Draft
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
ANGSTROM = "\u212b"  # the Ångström sign: NFC turns it into U+00C5
assert NFC != NFD


def _tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every entry under ``root``: kind, permission bits and (for files) content."""
    found: dict[str, tuple[str, int, bytes]] = {}
    for entry in sorted(root.rglob("*")):
        info = entry.lstat()
        if entry.is_symlink():
            found[str(entry.relative_to(root))] = ("link", 0, os.readlink(entry).encode())
        elif entry.is_dir():
            found[str(entry.relative_to(root))] = ("dir", info.st_mode & 0o777, b"")
        else:
            found[str(entry.relative_to(root))] = ("file", info.st_mode & 0o777, entry.read_bytes())
    return found


def _new_files(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {name for name in after if name not in before}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory two levels down, so ``../`` still lands inside ``tmp_path``."""
    here = tmp_path / "top" / "cwd"
    (here / "sub").mkdir(parents=True)
    monkeypatch.chdir(here)
    return here


# -- store paths ---------------------------------------------------------------------

OPEN, REJECT, EITHER = "open", "reject", "either"

PATH_CASES: list[tuple[str, object, str]] = [
    ("plain", "m.mind", OPEN),
    ("parent", "../up.mind", OPEN),
    ("dotdot inside", "sub/../y.mind", OPEN),
    ("dot slash", "./dot.mind", OPEN),
    ("pathlike", Path("sub/p.mind"), OPEN),
    ("absolute", "{top}/abs.mind", OPEN),
    ("empty", "", REJECT),
    ("NUL", "a\x00b.mind", REJECT),
    ("NUL at end", "m.mind\x00", REJECT),
    ("dot", ".", REJECT),
    ("dotdot", "..", REJECT),
    ("directory", "sub", REJECT),
    ("directory slash", "sub/", REJECT),
    ("directory dot", "sub/.", REJECT),
    ("missing directory", "missing/x.mind", REJECT),
    ("tilde is literal", "~/x.mind", REJECT),
    ("variable is literal", "$HOME/x.mind", REJECT),
    ("file: URI", "file:u.mind", OPEN),
    ("file: URI with query", "file:v.mind?mode=memory&cache=shared", OPEN),
    ("file: memory URI", "file::memory:", OPEN),
    ("file: absolute URI", "file:///etc/passwd", REJECT),
    ("memory lookalike", ":memory:x", OPEN),
    ("memory lookalike 2", "./:memory:", OPEN),
    ("name 255", "n" * 255, REJECT),
    ("name 300", "n" * 300, REJECT),
    ("segment 300", "sub/" + "s" * 300 + ".mind", REJECT),
    ("lone surrogate", "\ud800.mind", REJECT),
    ("escaped byte", "\udcff.mind", EITHER),
    ("NFC name", NFC + ".mind", OPEN),
    ("NFD name", NFD + ".mind", OPEN),
    ("newline", "line\nbreak.mind", OPEN),
    ("dash", "-wal", OPEN),
    ("bytes", b"m.mind", REJECT),
    ("int", 42, REJECT),
]


def _expected_location(cwd: Path, text: str) -> Path:
    """Where a literal path lands: joined to the working directory, ``..`` resolved lexically."""
    return Path(os.path.normpath(os.path.join(cwd, text)))


def _open_in_place(path: object, cwd: Path, root: Path) -> bool:
    """Open ``path``, write with vectors, close, reopen; every file must land beside it.

    Returns:
        ``False`` when the path was rejected (having created nothing), else ``True``.
    """
    before = _tree(root)
    try:
        store = embedmind.Store.open(path, embedder=HashingEmbedder(8))  # type: ignore[arg-type]
    except embedmind.InvalidInputError:
        assert _tree(root) == before, "a rejected path created files"
        return False
    expected = _expected_location(cwd, os.fspath(path))  # type: ignore[call-overload]
    with store:
        assert store.path == str(expected)
        store.remember_many([Draft(f"apple number {i}", id=f"m{i}") for i in range(3)])
    # Reopen without an embedder (no index file is loaded): the data is in that file,
    # so a "file:...?mode=memory" path was never an in-memory database.
    with embedmind.Store.open(str(expected), embedder=None) as store:
        assert store.stats().live == 3
    created = _new_files(before, _tree(root))
    directory = os.path.relpath(expected.parent, root)
    outside = {
        name
        for name in created
        if os.path.dirname(name) != (directory if directory != "." else "")
        or not os.path.basename(name).startswith(expected.name)
    }
    assert not outside, f"files outside the store's directory or name: {outside}"
    names = {os.path.basename(name) for name in created}
    assert expected.name in names
    # The index file was saved: a name too long for its temporary file would lose it silently.
    assert expected.name + "-vectors" in names, names
    return True


@pytest.mark.parametrize(
    ("label", "path", "outcome"), PATH_CASES, ids=[case[0] for case in PATH_CASES]
)
def test_store_paths_are_literal_and_stay_in_their_directory(
    cwd: Path, label: str, path: object, outcome: str, figures: Figures
) -> None:
    root = cwd.parent.parent
    if isinstance(path, str):
        path = path.replace("{top}", str(cwd.parent))
    opened = _open_in_place(path, cwd, root)
    if opened:
        assert outcome in (OPEN, EITHER), f"{label}: {path!r} opened instead of being rejected"
    else:
        assert outcome in (REJECT, EITHER), f"{label}: rejected, but it names a usable file"
    figures(cases=1, leaks=0)


@pytest.mark.parametrize("length", [100, 200, 226, 232, 233, 240, 244, 250, 254])
def test_long_file_names_work_fully_or_are_rejected(
    tmp_path: Path, length: int, figures: Figures
) -> None:
    # Every sibling (``-queue.lock``, the index file's temporary name) must fit the
    # file system's name limit too, or the store half works.
    _open_in_place(tmp_path / ("m" * length), tmp_path, tmp_path)
    figures(cases=1, leaks=0)


@pytest.mark.parametrize("total", [300, 480, 500, 504, 505, 520, 700])
def test_long_paths_work_fully_or_are_rejected(
    tmp_path: Path, total: int, figures: Figures
) -> None:
    # SQLite's own limit (512 bytes including "-journal") is below the OS's.
    directory = tmp_path
    while len(str(directory)) + 60 < total:
        directory = directory / ("d" * 50)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ("m" * (total - len(str(directory)) - 1))
    assert len(str(path)) == total
    _open_in_place(path, tmp_path, tmp_path)
    figures(cases=1, leaks=0)


def test_memory_store_creates_no_file(cwd: Path, figures: Figures) -> None:
    root = cwd.parent.parent
    before = _tree(root)
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(8)) as store:
        store.remember("apple", id="a")
        assert store.path == ":memory:"
    assert _tree(root) == before
    figures(cases=1, leaks=0)


# -- namespaces ------------------------------------------------------------------------

NAMESPACE_CASES: list[tuple[object, str]] = [
    ("../x", REJECT),
    ("a/../b", REJECT),
    ("a/./b", REJECT),
    (".", REJECT),
    ("..", REJECT),
    ("", REJECT),
    (" ", REJECT),
    ("/abs", REJECT),
    ("/", REJECT),
    ("a/", REJECT),
    ("a//b", REJECT),
    ("\x00", REJECT),
    ("a\x00b", REJECT),
    ("a\nb", REJECT),
    ("\ud800", REJECT),
    ("a/\udcff", REJECT),
    ("n" * 300, REJECT),
    ("n" * 257, REJECT),
    ("a/" + "n" * 300, REJECT),
    ("a/*", REJECT),
    ("*", REJECT),
    ("file:///etc/passwd", REJECT),
    (b"bytes", REJECT),
    (None, REJECT),
    (7, REJECT),
    ("n" * 256, OPEN),
    ("file:x", OPEN),
    ("C:\\windows", OPEN),
    ("a\\..\\b", OPEN),
    ("~", OPEN),
    ("$HOME", OPEN),
    ("...", OPEN),
    ("a/.b", OPEN),
    ("\u202eevil", OPEN),
    (NFD, OPEN),
    (f"x/{ANGSTROM}", OPEN),
]


@pytest.mark.parametrize(("namespace", "outcome"), NAMESPACE_CASES, ids=repr)
def test_namespaces_are_rejected_or_only_data(
    tmp_path: Path, namespace: object, outcome: str, figures: Figures
) -> None:
    path = tmp_path / "s.mind"
    embedmind.Store.open(path, embedder=None).close()
    before = _tree(tmp_path)
    with embedmind.Store.open(path, embedder=None) as store:
        if outcome == REJECT:
            with pytest.raises(embedmind.InvalidInputError):
                store.remember("apple", id="m", namespace=namespace)  # type: ignore[arg-type]
            assert store.stats().live == 0
        else:
            memory = store.remember("apple", id="m", namespace=namespace)  # type: ignore[arg-type]
            assert isinstance(namespace, str)
            stored = unicodedata.normalize("NFC", namespace)
            assert memory.namespace == stored
            assert [m.id for m in store.iter(namespace)] == ["m"]
            assert store.stats().by_namespace == {stored: 1}
    # The namespace never became a file or a directory.
    after = _tree(tmp_path)
    assert {os.path.basename(n) for n in _new_files(before, after)} <= {
        "s.mind-wal",
        "s.mind-shm",
    }
    figures(cases=1, leaks=0)


SPELLINGS = [(NFC, NFD), (NFD, NFC), (f"x/{ANGSTROM}", "x/\u00c5"), ("x/\u00c5", f"x/{ANGSTROM}")]


@pytest.mark.parametrize(("written", "read"), SPELLINGS, ids=["nfc-nfd", "nfd-nfc", "sign", "ring"])
def test_nfc_and_nfd_spell_one_namespace_on_every_path(
    written: str, read: str, figures: Figures
) -> None:
    assert written != read
    assert unicodedata.normalize("NFC", written) == unicodedata.normalize("NFC", read)
    canonical = unicodedata.normalize("NFC", written)
    reads: list[tuple[str, Callable[[embedmind.Store], object], object]] = [
        ("iter", lambda s: {m.id for m in s.iter(read)}, {"mine", "low"}),
        ("iter subtree", lambda s: {m.id for m in s.iter(f"{read}/*")}, {"mine", "low", "deep"}),
        ("iter list", lambda s: {m.id for m in s.iter([read])}, {"mine", "low"}),
        (
            "recall text",
            lambda s: set(s.recall("apple", mode="text", namespace=read).ids),
            {"mine", "low"},
        ),
        (
            "recall vector",
            lambda s: set(s.recall("apple", mode="vector", namespace=read).ids),
            {"mine", "low"},
        ),
        (
            "recall hybrid",
            lambda s: set(s.recall("apple", namespace=read).ids),
            {"mine", "low"},
        ),
        (
            "follow links",
            lambda s: set(s.recall("apple", mode="text", namespace=read, follow_links=True).ids),
            {"mine", "low", "team"},
        ),
        (
            "fragments",
            lambda s: {h.record_id for h in s.fragments.query("apple", namespace=read)},
            {"mine"},
        ),
        ("dedup", lambda s: s.find_by_fingerprint(read, "semantic", "apple pie").id, "mine"),
        ("links", lambda s: [(x.src, x.dst) for x in s.links(read)], [(canonical, "team")]),
        ("stats", lambda s: s.stats().by_namespace.get(canonical), 2),
        (
            "namespaces",
            lambda s: {n.namespace: n.live for n in s.namespaces()}.get(canonical),
            2,
        ),
    ]
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(16)) as store:
        store.remember("apple pie", id="mine", namespace=written)
        store.remember("apple tart", id="low", namespace=written, tier="working")
        store.remember("apple deep", id="deep", namespace=f"{written}/deeper")
        store.remember("apple team", id="team", namespace="team")
        store.remember("apple other", id="other", namespace="other")
        store.fragments.put("mine", [((0, 5), "apple")])
        store.fragments.put("other", [((0, 5), "apple")])
        store.link_namespaces(written, "team")
        for name, call, expected in reads:
            assert call(store) == expected, name
        assert store.get("mine").namespace == canonical  # type: ignore[union-attr]
        # Writes address it the same way.
        assert store.move(["low"], read, "other") == 1
        assert store.delete_namespace(read) == 1
        assert store.unlink(read, "team")
        assert {m.id for m in store.iter()} == {"deep", "team", "other", "low"}
    figures(cases=len(reads) + 3, leaks=0)


# -- symlinks planted where the engine creates files --------------------------------------

SYMLINK_CHILD = r"""
import json, os, sys, tempfile
import embedmind
from embedmind.embedders.hashing import HashingEmbedder

# Deterministic temporary names, so symlinks can be planted where an index save
# will try first; every name handed out is recorded.
PLANTED = ["PLANTED1", "PLANTED2"]
handed_out = []
class Names:
    def __init__(self):
        self.random = tempfile._RandomNameSequence()
    def __iter__(self):
        return self
    def __next__(self):
        name = PLANTED[len(handed_out)] if len(handed_out) < len(PLANTED) else next(self.random)
        handed_out.append(name)
        return name
tempfile._get_candidate_names = Names

def use(path):
    with embedmind.Store.open(path, embedder=HashingEmbedder(8)) as store:
        store.remember_many([embedmind.Draft(f"apple {i}", id=f"m{i}") for i in range(5)])
        store.fragments.put("m0", [((0, 5), "apple")])
        store.vacuum()
    with embedmind.Store.open(path, embedder=HashingEmbedder(8)) as store:
        return len(store.recall("apple", k=10, mode="vector"))

results = []
for case in json.loads(sys.argv[1]):
    handed_out.clear()
    try:
        outcome = f"ok {use(case['path'])}"
    except embedmind.EmbedmindError as e:
        outcome = f"typed {type(e).__name__}: {e}"
    except Exception as e:
        outcome = f"untyped {type(e).__name__}: {e}"
    results.append({"outcome": outcome, "names": list(handed_out)})
print(json.dumps(results))
"""

PLANTS = [
    ["-wal"],
    ["-shm"],
    ["-journal"],
    ["-queue.lock"],
    ["-write.lock"],
    ["-vectors"],
    ["-fragments"],
    # Predictable temporary names an index save might be tempted to use.
    ["-vectors.tmp"],
    ["-vectors.new"],
    ["-vectors~"],
    # The first two names the patched ``tempfile`` hands out: a save tries them first.
    ["-vectors.PLANTED1.tmp", "-vectors.PLANTED2.tmp"],
    ["-fragments.PLANTED1.tmp", "-fragments.PLANTED2.tmp"],
]


@pytest.mark.timeout(120)
def test_planted_symlinks_are_never_followed(tmp_path: Path, figures: Figures) -> None:
    cases = []
    for i, suffixes in enumerate(PLANTS):
        for target_kind in ("victim", "dangling"):
            case = tmp_path / f"case{i}-{target_kind}"
            store_dir, outside = case / "store", case / "outside"
            store_dir.mkdir(parents=True)
            outside.mkdir()
            victim = outside / "victim"
            victim.write_bytes(b"VICTIM CONTENT")
            target = victim if target_kind == "victim" else outside / "created-through-link"
            path = store_dir / "m.mind"
            for suffix in suffixes:
                (store_dir / ("m.mind" + suffix)).symlink_to(target)
            label = f"{' '.join(suffixes)} -> {target_kind}"
            cases.append({"path": str(path), "suffixes": suffixes, "label": label})
    result = subprocess.run(
        [sys.executable, "-c", SYMLINK_CHILD, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = json.loads(result.stdout)
    leaks = 0
    for case, got in zip(cases, outcomes, strict=True):
        label = case["label"]
        assert not got["outcome"].startswith("untyped"), (label, got)
        outside = Path(case["path"]).parent.parent / "outside"
        entries = {p.name: p.read_bytes() for p in outside.iterdir()}
        if entries != {"victim": b"VICTIM CONTENT"}:
            leaks += 1
        assert entries == {"victim": b"VICTIM CONTENT"}, (label, got, sorted(entries))
        if got["outcome"].startswith("ok"):
            # The index file is a real file in the store's directory, never the link.
            index = Path(case["path"] + "-vectors")
            assert index.is_file() and not index.is_symlink(), label
        if "-vectors.PLANTED1.tmp" in case["suffixes"]:
            # Index saves draw their temporary names from ``tempfile``, so the planted
            # names were the ones a save tried first; whether it skipped the links
            # (O_EXCL) or removed them as leftovers, it never wrote through them.
            assert got["outcome"] == "ok 5", (label, got)
            assert got["names"][:1] == ["PLANTED1"], (label, got)
            for suffix in case["suffixes"]:
                planted = Path(case["path"] + suffix)
                assert planted.is_symlink() or not planted.exists(), (label, suffix)
    figures(cases=len(cases), leaks=leaks)


# -- permissions -----------------------------------------------------------------------------

MODES_CHILD = r"""
import json, os, stat, sys
import embedmind
from embedmind.embedders.hashing import HashingEmbedder
os.umask(0)  # the most permissive umask: only the engine's own modes protect the files
path = sys.argv[1]
with embedmind.Store.open(path, embedder=HashingEmbedder(8)) as store:
    store.remember_many([embedmind.Draft(f"apple {i}", id=f"m{i}") for i in range(5)])
    store.fragments.put("m0", [((0, 5), "apple")])
    store.vacuum()
modes = {}
with embedmind.Store.open(path, embedder=HashingEmbedder(8)) as store:
    store.remember("pear", id="p")  # the WAL and SHM exist while the store is open
    store.recall("apple", mode="vector")
    directory = os.path.dirname(path)
    for name in os.listdir(directory):
        info = os.lstat(os.path.join(directory, name))
        modes[name] = [stat.S_ISREG(info.st_mode), info.st_mode & 0o777]
print(json.dumps(modes))
"""


@pytest.mark.timeout(60)
def test_every_file_is_private_even_with_umask_zero(tmp_path: Path, figures: Figures) -> None:
    path = tmp_path / "m.mind"
    result = subprocess.run(
        [sys.executable, "-c", MODES_CHILD, str(path)], capture_output=True, text=True, timeout=50
    )
    assert result.returncode == 0, result.stderr[-3000:]
    modes = json.loads(result.stdout)
    expected = {"m.mind", "m.mind-wal", "m.mind-shm", "m.mind-vectors"}
    expected |= {"m.mind-queue.lock", "m.mind-write.lock"}
    assert expected <= set(modes), sorted(modes)
    wrong = {name: oct(mode) for name, (regular, mode) in modes.items() if mode != 0o600}
    assert all(regular for regular, _ in modes.values()), modes
    assert not wrong, f"files not created 0600: {wrong}"
    figures(cases=len(modes), leaks=len(wrong))
