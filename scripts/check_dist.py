"""Build the four wheels, then install them as a user would: fresh venvs, offline.

Usage: python scripts/check_dist.py [--build-only]

``--build-only`` (``make dist``) builds the wheels of embedmind, langchain-embedmind,
llama-index-vector-stores-embedmind and embedmind-bench into dist/ and fails if the
build printed any warning (a deprecated ``project.license`` table printed hundreds). Without it
(``make check-dist``, part of ``make test``) it goes on:

1. fills build/wheelhouse with the third-party wheels every extra needs (``pip
   download``, the only step that may reach PyPI; reused while no dependency changes);
2. checks that every extra of the built embedmind wheel resolves from dist/ and the
   wheelhouse alone;
3. runs each ``pip install`` line of the README's "Install" section in a fresh venv
   with ``--no-index`` (pip configuration ignored), then ``pip check``, imports what
   the line promises (and that the engine alone pulls in no LLM framework), and runs
   the README's 30-second tour from outside the repository.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = [ROOT, ROOT / "adapters" / "langchain", ROOT / "adapters" / "llamaindex", ROOT / "bench"]
DIST = ROOT / "dist"
WHEELHOUSE = ROOT / "build" / "wheelhouse"
README = ROOT / "README.md"
# The build backend the wheelhouse carries for the from-clone lines (`pip install .`
# builds in an isolated environment, which --no-index fills from the wheelhouse).
BUILD_BACKEND = "setuptools>=77"
# Extras of the engine a user never installs from the README: the tools.
DEVELOPER_EXTRAS = {"dev"}
# A Python warning class (SetuptoolsDeprecationWarning, BuildBackendWarning...),
# a distutils `warning:` line or pip's `WARNING:`.
WARNING = re.compile(r"\w*Warning\b|warning:", re.IGNORECASE)
# What each word in an install line promises to make importable.
PROMISES = {
    "langchain": ["langchain_embedmind"],
    "langgraph": ["langchain_embedmind", "langgraph.store.base"],
    "llamaindex": ["llama_index.vector_stores.embedmind"],
    "mcp": ["mcp", "embedmind.cli.mcp_server"],
}
PROMISES["all"] = sorted({m for mods in PROMISES.values() for m in mods})
PROMISES["bench"] = ["embedmind_bench.cli"]  # not part of [all]: its own distribution
TRACE = bool(os.environ.get("CHECK_DIST_TRACE"))  # print each command and its duration
# What the engine alone must not install: the frameworks, and the benchmarks.
FRAMEWORKS = ["langchain_core", "langgraph", "llama_index", "mcp", "embedmind_bench"]


def hermetic_env(**extra: str) -> dict[str, str]:
    """Return the environment with no pip configuration and nothing on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.pop("PYTHONPATH", None)
    # Byte-compiling disabled makes distutils print "warning:" lines of its own.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def run(cmd: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run ``cmd``; return its combined output, or exit with it on failure."""
    started = time.perf_counter()
    result = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if TRACE:
        print(f"  {time.perf_counter() - started:5.1f}s {shlex.join(cmd)[:160]}", file=sys.stderr)
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {shlex.join(cmd)}\n{result.stdout[-4000:]}")
    return result.stdout


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


def clone_tree(into: Path) -> Path:
    """Copy the files git would clone (plus new, unignored ones) into ``into``.

    Building from the copy is what a user's clone does, leaves no build output in the
    working tree, and skips setuptools' walk through .venv (most of a build's time).
    """
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    for name in filter(None, listed.split("\0")):
        source, target = ROOT / name, into / name
        if source.is_file():  # a file deleted but not yet committed is still listed
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


def build_wheels(clone: Path) -> list[Path]:
    """Build the four wheels of ``clone`` into dist/ offline; refuse any build warning."""
    DIST.mkdir(exist_ok=True)
    for old in DIST.glob("*.whl"):
        old.unlink()
    projects = [str(clone / p.relative_to(ROOT)) for p in PROJECTS]
    wheel = pip("wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(DIST), *projects)
    output = run(wheel, env=hermetic_env())
    warnings = sorted({line.strip() for line in output.splitlines() if WARNING.search(line)})
    if warnings:
        sys.exit("the wheel build printed warnings; fix pyproject.toml:\n" + "\n".join(warnings))
    wheels = sorted(DIST.glob("*.whl"))
    if len(wheels) != len(PROJECTS):
        sys.exit(f"expected {len(PROJECTS)} wheels in {DIST}, found {[w.name for w in wheels]}")
    return wheels


def metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(name).decode())


def user_extras(engine_wheel: Path) -> list[str]:
    return [
        e for e in metadata(engine_wheel).get_all("Provides-Extra", []) if e not in DEVELOPER_EXTRAS
    ]


def fill_wheelhouse(wheels: list[Path], extras: list[str]) -> None:
    """Download the third-party wheels of every user extra, unless they are already there."""
    requires = sorted(r for w in wheels for r in metadata(w).get_all("Requires-Dist", []))
    key = hashlib.sha256("\n".join([BUILD_BACKEND, *requires]).encode()).hexdigest()
    stamp = WHEELHOUSE / ".requirements-sha256"
    if stamp.exists() and stamp.read_text() == key:
        return
    shutil.rmtree(WHEELHOUSE, ignore_errors=True)
    # The ordinary pip configuration: this is the one step that may use the network.
    wanted = [f"embedmind[{','.join(extras)}]", "langchain-embedmind[langgraph]", BUILD_BACKEND]
    run(pip("download", "-q", "-d", str(WHEELHOUSE), "--find-links", str(DIST), *wanted))
    for own in WHEELHOUSE.glob("*embedmind*"):  # ours come from dist/, nowhere else
        own.unlink()
    stamp.write_text(key)


def offline(python: Path, *args: str) -> list[str]:
    """Return a pip command acting on ``python``'s venv that reads only dist/ and the wheelhouse."""
    return pip("--python", str(python), *args[:1], "--no-index",
               "--find-links", str(DIST), "--find-links", str(WHEELHOUSE), *args[1:])  # fmt: skip


def fresh_venv(path: Path) -> Path:
    """Create an empty venv at ``path``; return its python."""
    run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    return path / "bin" / "python"


def site_packages(python: Path) -> Path:
    return Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip()
    )


def engine_layer(engine_wheel: Path, scratch: Path) -> Path:
    """Install the engine's third-party dependencies once; return their site-packages.

    Every install line includes the engine, so each fresh venv sees this layer through
    a .pth file instead of unpacking onnxruntime, onnx and numpy again (most of a line's
    time). pip sees the layer's packages as installed and installs everything else; the
    layer holds only what the built engine wheel declares, so a dependency it drops
    fails the probes and the tour.
    """
    requires = [r for r in metadata(engine_wheel).get_all("Requires-Dist", []) if "extra" not in r]
    python = fresh_venv(scratch / "engine-layer")
    run(offline(python, "install", "-q", "--no-compile", *requires), env=hermetic_env())
    return site_packages(python)


def check_extras_resolve(extras: list[str], scratch: Path) -> None:
    """Every user extra of the engine resolves offline (`pip install --dry-run`).

    One resolution of all of them together: it fails if any one extra names something
    that is in neither dist/ nor the wheelhouse, at a third of the cost of one each.
    """
    wanted = f"embedmind[{','.join(extras)}]"
    python = fresh_venv(scratch / "resolve")
    run(offline(python, "install", "--dry-run", "-q", wanted), env=hermetic_env())


def readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if match is None:
        sys.exit(f"README.md has no '## {title}' section")
    return match.group(1)


def install_lines() -> list[list[str]]:
    """Return the README "Install" section's ``pip install`` lines, split like a shell."""
    blocks = re.findall(r"```sh\n(.*?)```", readme_section("Install"), re.DOTALL)
    lines = [shlex.split(line, comments=True) for block in blocks for line in block.splitlines()]
    found = [words for words in lines if words[:2] == ["pip", "install"]]
    if not found:
        sys.exit("README.md's Install section shows no `pip install` line")
    return found


def probe(words: list[str]) -> str:
    """Python that checks what an install line promises, and nothing more is there."""
    said = set(re.findall(r"[a-z]+", " ".join(words)))  # "./adapters/langchain[langgraph]"
    wanted = {m for word, mods in PROMISES.items() if word in said for m in mods}
    absent = [] if wanted else FRAMEWORKS
    return (
        "import importlib, importlib.util, sys, embedmind\n"
        f"assert embedmind.__file__.startswith(sys.prefix), embedmind.__file__\n"
        f"for name in {sorted(wanted)!r}: importlib.import_module(name)\n"
        f"extra = [n for n in {absent!r} if importlib.util.find_spec(n)]\n"
        "assert not extra, f'the engine alone installed {extra}'\n"
    )


def check_line(words: list[str], scratch: Path, tour: str, layer: Path) -> float:
    """Run one README line in a clone into a fresh venv offline; probe it; run the tour."""
    started = time.perf_counter()
    python = fresh_venv(scratch / "venv")
    (site_packages(python) / "_engine_layer.pth").write_text(f"{layer}\n")
    env = hermetic_env(EMBEDMIND_CACHE_DIR=str(scratch.parent / "cache"))
    clone = shutil.copytree(scratch.parent / "clone", scratch / "clone", symlinks=True)
    run(offline(python, "install", "-q", "--no-compile", *words[2:]), cwd=clone, env=env)
    run(pip("--python", str(python), "check"), env=env)
    run([str(python), "-c", probe(words)], cwd=scratch, env=env)
    run([str(python), "-c", tour], cwd=scratch, env=env)
    shutil.rmtree(scratch)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-only", action="store_true", help="only build dist/ (make dist)")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="check-dist-") as tmp:
        scratch = Path(tmp)
        clone = clone_tree(scratch / "clone")
        wheels = build_wheels(clone)
        print(f"built {', '.join(w.name for w in wheels)} into {DIST.relative_to(ROOT)}/")
        if args.build_only:
            return
        shutil.copytree(DIST, clone / "dist")  # as `make dist` in the clone leaves it
        engine = next(w for w in wheels if w.name.startswith("embedmind-"))
        extras = user_extras(engine)
        fill_wheelhouse(wheels, extras)
        check_extras_resolve(extras, scratch)
        print(f"extras resolve offline: {', '.join(extras)}")
        layer = engine_layer(engine, scratch)
        tour = re.findall(r"```python\n(.*?)```", readme_section("A 30-second tour"), re.DOTALL)
        lines = install_lines()
        # Two at a time: the 2-core CI box spends much of a line waiting on the disk.
        with ThreadPoolExecutor(max_workers=2) as pool:
            dirs = [scratch / f"line-{i}" for i in range(len(lines))]
            timings = pool.map(
                check_line, lines, dirs, [tour[0]] * len(lines), [layer] * len(lines)
            )
            for words, seconds in zip(lines, timings, strict=True):
                print(f"ok {seconds:5.1f}s  {shlex.join(words)}")
    print(f"check-dist passed in {time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
