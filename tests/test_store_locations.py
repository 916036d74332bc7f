"""Locations that are not file paths: libpq strings, and PostgreSQL's system schemas (issue 49 §5).

A libpq ``key=value`` string (``"host=db user=app password=... dbname=prod"``)
once opened a SQLite file named after it, the password in the name. Now the
PostgreSQL backend claims it, and the SQLite backend refuses it on its own, so
no registry (a bare one, or one with a third backend) turns it into a file, and
no message repeats its password. ``?schema=pg_catalog`` and the like are refused
before any connection. None of these tests needs a server: a store that would
connect points at port 1, where nothing listens.
"""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import embedmind
from embedmind import plugins
from embedmind.backend import locations
from embedmind.backend.locations import (
    LIBPQ_KEYWORDS,
    libpq_pairs,
    libpq_string,
    looks_like_libpq,
    masked,
)
from embedmind.backend.values import OpenOptions
from embedmind.cli.main import main
from embedmind.errors import InvalidInputError, StorageError

SECRET = "s3cretPW"
LIBPQ_LOCATIONS = [  # every well-formed one names port 1 on 127.0.0.1: never a real server
    f"host=127.0.0.1 port=1 user=app password={SECRET} dbname=prod",
    f"dbname=prod host=127.0.0.1 port=1 password={SECRET}",
    f"  user = app   password = {SECRET} host=127.0.0.1 port=1",
    f"sslmode=disable host=127.0.0.1 port=1 password='{SECRET} with spaces'",
    f"prod password={SECRET}",  # a typo: still no file name
    f"HOST=127.0.0.1 password={SECRET}",
    f"host=127.0.0.1 password='{SECRET}",  # an unclosed quote
]
SYSTEM_SCHEMAS = ["pg_catalog", "pg_toast", "pg_temp_1", "pg_toast_temp_1", "information_schema"]


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _chain(error: BaseException) -> str:
    """The error's message and those of every error it chains."""
    parts = []
    current: BaseException | None = error
    while current is not None:
        parts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


@pytest.mark.parametrize("location", LIBPQ_LOCATIONS)
def test_the_sqlite_backend_never_opens_a_libpq_string_as_a_file(cwd: Path, location: str) -> None:
    # The built-in backend's own refusal, whichever backends are registered beside it.
    sqlite = plugins.built_in_backend()
    with pytest.raises(InvalidInputError, match="libpq connection string") as caught:
        sqlite.open(OpenOptions(location))
    assert SECRET not in _chain(caught.value)
    with pytest.raises(InvalidInputError):
        sqlite.exists(location)
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("location", LIBPQ_LOCATIONS)
def test_store_open_takes_a_libpq_string_as_postgresql_never_as_a_file(
    cwd: Path, location: str
) -> None:
    pytest.importorskip("psycopg")
    assert plugins.backend_for(location).name == "postgresql"
    # Malformed: refused before connecting. Well formed: no server on port 1.
    with pytest.raises((InvalidInputError, StorageError)) as caught:
        embedmind.Store.open(location, embedder=None, busy_timeout=2)
    assert SECRET not in _chain(caught.value)
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("location", LIBPQ_LOCATIONS[:2])
def test_the_cli_neither_creates_a_file_nor_prints_the_password(
    cwd: Path, location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("psycopg")
    for command in (["stats"], ["remember", "tea"], ["doctor", "--verify"]):
        assert main(["--store", location, *command]) != 0
        out, err = capsys.readouterr()
        assert SECRET not in out + err, command
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("name", SYSTEM_SCHEMAS + [s.upper() for s in SYSTEM_SCHEMAS])
def test_a_system_schema_is_refused_before_any_connection(cwd: Path, name: str) -> None:
    pytest.importorskip("psycopg")
    for location in (
        f"postgresql://app:{SECRET}@127.0.0.1:1/prod?schema={name}",
        f"host=127.0.0.1 port=1 user=app password={SECRET} dbname=prod schema={name}",
    ):
        # A connection attempt would fail with a StorageError: port 1 has no server.
        with pytest.raises(InvalidInputError, match=r"^schema: ") as caught:
            embedmind.Store.open(location, embedder=None)
        assert SECRET not in str(caught.value)
        with pytest.raises(InvalidInputError, match=r"^schema: "):
            plugins.backend_for(location).exists(location)  # what reading commands ask
    assert os.listdir(cwd) == []


# -- the parser and the mask, against libpq's own parser --------------------------------------

_VALUES = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12)
_PAIRS = st.dictionaries(
    st.sampled_from(sorted(LIBPQ_KEYWORDS - {"schema"})), _VALUES, min_size=1, max_size=5
)


@given(pairs=_PAIRS)
def test_a_joined_string_reads_back_as_its_pairs_here_and_in_libpq(pairs: dict[str, str]) -> None:
    psycopg = pytest.importorskip("psycopg")
    text = libpq_string(list(pairs.items()))
    assert looks_like_libpq(text)
    assert dict(libpq_pairs(text)) == pairs
    assert psycopg.conninfo.conninfo_to_dict(text) == pairs


_PIECES = st.lists(st.sampled_from(["host", "port", "=", " ", "\t", "'", "\\", "a", "b"]))


@given(pieces=_PIECES)
def test_the_parser_reads_what_libpq_reads_and_refuses_what_it_refuses(pieces: list[str]) -> None:
    psycopg = pytest.importorskip("psycopg")
    text = "host=" + "".join(pieces)
    try:
        ours: dict[str, str] | None = dict(libpq_pairs(text))
    except InvalidInputError:
        ours = None
    try:
        theirs: dict[str, str] | None = psycopg.conninfo.conninfo_to_dict(text)
    except psycopg.ProgrammingError as e:
        if "invalid connection option" in str(e):  # a keyword libpq lacks: ours lets it by
            return
        theirs = None
    assert ours == theirs


@given(pairs=_PAIRS, secret=st.text(alphabet="xyz", min_size=1, max_size=6))
def test_a_masked_location_never_holds_the_password(pairs: dict[str, str], secret: str) -> None:
    password = f"{SECRET}{secret}"
    joined = libpq_string([*pairs.items(), ("password", password)])
    url = f"postgresql://app:{password}@db:5432/prod?schema=s&sslpassword={password}"
    for location in (joined, url):
        assert password not in masked(location)
    assert "***" in masked(url)


def test_a_location_without_a_password_is_shown_as_given() -> None:
    for location in ("postgresql://app@db/prod?schema=s", "host=db dbname=prod", "a.mind"):
        assert masked(location) == location


def test_the_examples_in_the_docstrings_run() -> None:
    failed, tried = doctest.testmod(locations)
    assert (failed, tried > 0) == (0, True)
