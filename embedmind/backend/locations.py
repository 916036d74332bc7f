r"""Store locations that are not file paths: libpq ``key=value`` strings, and showing them safely.

``"host=127.0.0.1 port=5432 user=app password=... dbname=prod"`` is how
psycopg and libpq spell a connection; taken as a file path it would create a
SQLite file named after it, the password in the name. Every backend asks
:func:`looks_like_libpq` the same question: the PostgreSQL plugin claims such
a location, and the SQLite backend refuses it as a path, so no backend
registered later can turn one into a file.

A location may carry a password (a URL's ``user:password@``, a ``password=``
pair or query parameter); :func:`masked` is the form an error message or a
``path`` shows.

Example:
    >>> looks_like_libpq("host=db port=5432 dbname=prod"), looks_like_libpq("notes.mind")
    (True, False)
    >>> masked("host=db user=app password='s3 cret' dbname=prod")
    'host=db user=app password=*** dbname=prod'
    >>> masked("postgresql://app:s3cret@db/prod?schema=memory")
    'postgresql://app:***@db/prod?schema=memory'
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from embedmind.errors import InvalidInputError

LIBPQ_KEYWORDS = frozenset(
    {
        "application_name", "channel_binding", "client_encoding", "connect_timeout", "dbname",
        "fallback_application_name", "gssdelegation", "gssencmode", "gsslib", "host",
        "hostaddr", "keepalives", "keepalives_count", "keepalives_idle", "keepalives_interval",
        "krbsrvname", "load_balance_hosts", "max_protocol_version", "min_protocol_version",
        "oauth_client_id", "oauth_client_secret", "oauth_issuer", "oauth_scope", "options",
        "passfile", "password", "port", "replication", "require_auth", "requirepeer",
        "scram_client_key", "scram_server_key", "service",
        "ssl_max_protocol_version", "ssl_min_protocol_version", "sslcert", "sslcertmode",
        "sslcompression", "sslcrl", "sslcrldir", "sslkey", "sslkeylogfile", "sslmode",
        "sslnegotiation", "sslpassword", "sslrootcert", "sslsni", "target_session_attrs",
        "tcp_user_timeout", "user",
        "schema",  # the PostgreSQL backend's own, as in a URL's ?schema=
    }
)  # fmt: skip
"""The keywords of libpq 18's connection strings (``PQconndefaults``), and ``schema``."""
SECRET_KEYWORDS = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)
"""The keywords whose values :func:`masked` hides."""
MASK = "***"
URL_FIX = "postgresql://user:password@host:port/dbname?schema=embedmind"
"""The URL form of a PostgreSQL store location, which error messages suggest."""

_KEYWORD_WORD = re.compile(r"(?:^|\s)([A-Za-z_]+)\s*=")
_SPACE = " \t\n\r\f\v"


def looks_like_libpq(location: str) -> bool:
    """Whether ``location`` holds a libpq ``keyword=value`` word, so is no file path.

    Any word counts, not only the first: ``"prod password=s3cret"`` is a
    connection string with a typo, never a file name to create.

    Example:
        >>> looks_like_libpq("prod password=s3cret"), looks_like_libpq("file:a.mind?mode=ro")
        (True, False)
    """
    return any(m.group(1).lower() in LIBPQ_KEYWORDS for m in _KEYWORD_WORD.finditer(location))


def libpq_pairs(location: str) -> list[tuple[str, str]]:
    r"""Split a libpq connection string into ``(keyword, value)`` pairs, as libpq reads it.

    A value is a run of non-space characters, or single-quoted; a backslash
    escapes the next character in either. Keywords are not checked here.

    Raises:
        InvalidInputError: When it is not ``keyword=value`` pairs; the message
            never repeats any of it (a value may be a password).

    Example:
        >>> libpq_pairs(r"host=db password='it\'s a secret'")
        [('host', 'db'), ('password', "it's a secret")]
    """
    pairs: list[tuple[str, str]] = []
    at, end = 0, len(location)
    while True:
        at = _skip_space(location, at)
        if at == end:
            return pairs
        start = at
        while at < end and location[at] != "=" and location[at] not in _SPACE:
            at += 1
        keyword = location[start:at]
        at = _skip_space(location, at)
        if not keyword or at == end or location[at] != "=":
            raise _not_pairs()
        value, at = _value(location, _skip_space(location, at + 1))
        pairs.append((keyword, value))


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _value(text: str, at: int) -> tuple[str, int]:
    """One value from ``at``: quoted or not, backslash escapes resolved; where it ends."""
    quoted = at < len(text) and text[at] == "'"
    at += quoted
    out: list[str] = []
    while at < len(text):
        char = text[at]
        if quoted and char == "'":
            return "".join(out), at + 1
        if not quoted and char in _SPACE:
            return "".join(out), at
        if char == "\\":
            at += 1
            if at == len(text):
                break
            char = text[at]
        out.append(char)
        at += 1
    if quoted:
        raise _not_pairs("a quoted value is not closed")
    return "".join(out), at


def _not_pairs(why: str = "expected keyword=value pairs") -> InvalidInputError:
    return InvalidInputError(
        "location",
        f"not a libpq connection string ({why}; quote a value holding spaces: "
        f"password='a b'); or write it as a URL: {URL_FIX}",
    )


def libpq_string(pairs: list[tuple[str, str]]) -> str:
    """Join ``(keyword, value)`` pairs into a connection string libpq reads back as them.

    Example:
        >>> libpq_string([("host", "db"), ("password", "a b")])
        "host=db password='a b'"
    """
    return " ".join(f"{k}={_quoted(v)}" for k, v in pairs)


def _quoted(value: str) -> str:
    if value and not any(c in _SPACE or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def masked(location: str) -> str:
    """``location`` as an error message or ``Store.path`` may show it: every secret hidden.

    A URL's password and secret query parameters, and a libpq string's secret
    pairs, become ``***``; anything else comes back unchanged. A libpq-like
    string that does not parse is not shown at all.
    """
    if "://" in location.partition("?")[0]:
        return _masked_url(location)
    if not looks_like_libpq(location):
        return location
    try:
        pairs = libpq_pairs(location)
    except InvalidInputError:
        return "(a libpq connection string, not shown)"
    if not any(k in SECRET_KEYWORDS for k, _ in pairs):
        return location
    return libpq_string([(k, MASK if k in SECRET_KEYWORDS else v) for k, v in pairs])


def _masked_url(location: str) -> str:
    try:
        parts = urlsplit(location)
        user, at, host = parts.netloc.rpartition("@")
        query = parse_qsl(parts.query, keep_blank_values=True)
        secret_query = any(k in SECRET_KEYWORDS for k, _ in query)
        if not (at and ":" in user) and not secret_query:
            return location
        if at and ":" in user:
            parts = parts._replace(netloc=f"{user.partition(':')[0]}:{MASK}@{host}")
        if secret_query:
            hidden = [(k, MASK if k in SECRET_KEYWORDS else v) for k, v in query]
            parts = parts._replace(query=urlencode(hidden, safe="*"))
        return urlunsplit(parts)
    except ValueError:  # a malformed URL (an unclosed [ip6 literal...)
        return "(a URL, not shown)"
