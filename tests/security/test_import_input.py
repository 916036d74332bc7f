"""A bad import file gets a typed error naming its line and field, and writes nothing.

``import_jsonl`` reads files that may come from anywhere: another machine, an
older backup, a hand edit, an attacker. Every record goes through the same
validation as ``remember`` (ids, namespaces, content, metadata, tags, tiers,
times, confidence, entities, relations) plus the fields only an import
carries (supersession, counters, vectors as base64 float32, links, the
header). The table below starts from a valid export of more than one write
batch and spoils one field of one line; each case must raise
:class:`~embedmind.InvalidInputError` whose ``field`` is ``"line N: FIELD"``
and leave a full dump of the target store (schema and every row of every
table) unchanged. The spoilt line is the last memory, after the first batch
of 500, so a file that was validated line by line while writing would fail
this test. Controls prove the validation is not simply rejecting everything.
"""

from __future__ import annotations

import base64
import io
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import embedmind
from embedmind.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from conftest import Figures

DIMS = 8
MEMORIES = 520
HEADER, FIRST, LAST = 1, 2, MEMORIES + 1
LINK = MEMORIES + 2
NAN = float("nan")
_MEMORY_KEYS = {
    "type", "id", "namespace", "content", "metadata", "tags", "tier", "level", "agent",
    "session_id", "created_at", "updated_at", "valid_from", "valid_to", "expires_at",
    "superseded_by", "confidence", "access_count", "last_accessed_at", "fingerprint",
    "contradicted_by", "prior_confidence", "entities", "relations", "vectors",
}  # fmt: skip


def dump(store: embedmind.Store) -> list[Any]:
    """The schema and every row of every table (as in ``test_bad_input.py``)."""
    with store._db.read() as conn:
        schema = list(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name"))
        tables = [r[1] for r in schema if r[0] == "table"]
        return [schema] + [
            (table, sorted(conn.execute(f'SELECT * FROM "{table}"'), key=repr)) for table in tables
        ]


@pytest.fixture(scope="module")
def export() -> list[dict[str, Any]]:
    """A valid export with vectors: header, 520 memories (the last one rich), one link."""
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as source:
        source.remember_many([embedmind.Draft(f"filler {i}", id=f"f{i}") for i in range(519)])
        source.remember(
            "alice moved to porto",
            id="last",
            namespace="u/alice",
            metadata={"k": [1, {"x": None}]},
            tags=["home"],
            entities=["alice"],
            relations=[("about", "f1")],
            session_id="s1",
            agent="cli",
        )
        source.link_namespaces("u/alice", "shared", tiers=["semantic"], note="n")
        out = io.StringIO()
        source.export_jsonl(out, include_vectors=True)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == LINK and lines[LAST - 1]["id"] == "last"
    return lines


def _vector(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


Spoil = Callable[[list[Any]], None]


def field(line: int, name: str, value: Any) -> Spoil:
    def spoil(lines: list[Any]) -> None:
        lines[line - 1][name] = value

    return spoil


def drop(line: int, name: str) -> Spoil:
    def spoil(lines: list[Any]) -> None:
        del lines[line - 1][name]

    return spoil


def raw(line: int, text: str) -> Spoil:
    def spoil(lines: list[Any]) -> None:
        lines[line - 1] = text

    return spoil


def vectors(rows: Any) -> Spoil:
    return field(LAST, "vectors", rows)


def one_vector(**changes: Any) -> Spoil:
    return vectors([{"start": 0, "end": 20, "f32le": _vector([1.0] * DIMS), **changes}])


BAD_IMPORT: list[tuple[str, Spoil]] = [
    # Ids, namespaces, content.
    (f"line {LAST}: id", field(LAST, "id", "")),
    (f"line {LAST}: id", field(LAST, "id", "  ")),
    (f"line {LAST}: id", field(LAST, "id", None)),
    (f"line {LAST}: id", field(LAST, "id", 7)),
    (f"line {LAST}: id", field(LAST, "id", "a\x00b")),
    (f"line {LAST}: id", field(LAST, "id", "x" * 300)),
    (f"line {LAST}: id", field(LAST, "id", "f3")),  # twice in one file
    (f"line {LAST}: id", drop(LAST, "id")),
    (f"line {LAST}: namespace", field(LAST, "namespace", "a//b")),
    (f"line {LAST}: namespace", field(LAST, "namespace", "a/*")),
    (f"line {LAST}: namespace", field(LAST, "namespace", None)),
    (f"line {LAST}: namespace", drop(LAST, "namespace")),
    (f"line {LAST}: content", field(LAST, "content", 42)),
    (f"line {LAST}: content", field(LAST, "content", None)),
    (f"line {LAST}: content", field(LAST, "content", "x" * ((1 << 20) + 1))),
    (f"line {LAST}: content", drop(LAST, "content")),
    # Metadata (json.dumps writes NaN, and json.loads reads it back).
    (f"line {LAST}: metadata", field(LAST, "metadata", ["not", "a", "dict"])),
    (f"line {LAST}: metadata", field(LAST, "metadata", "{}")),
    (f"line {LAST}: metadata", field(LAST, "metadata", {"x": NAN})),
    (f"line {LAST}: metadata", field(LAST, "metadata", {"x": float("inf")})),
    (f"line {LAST}: metadata", field(LAST, "metadata", {"x": 2**70})),
    (f"line {LAST}: metadata", field(LAST, "metadata", {"a\x00": 1})),
    # Tags, tier, level, agent, session.
    (f"line {LAST}: tags", field(LAST, "tags", "home")),
    (f"line {LAST}: tags", field(LAST, "tags", [""])),
    (f"line {LAST}: tags", field(LAST, "tags", [3])),
    (f"line {LAST}: tags", field(LAST, "tags", None)),
    (f"line {LAST}: tier", field(LAST, "tier", "eternal")),
    (f"line {LAST}: tier", field(LAST, "tier", None)),
    (f"line {LAST}: tier", drop(LAST, "tier")),
    (f"line {LAST}: level", field(LAST, "level", "guessed")),
    (f"line {LAST}: agent", field(LAST, "agent", None)),
    (f"line {LAST}: agent", field(LAST, "agent", "a\x00")),
    (f"line {LAST}: session_id", field(LAST, "session_id", 5)),
    # Times: integer microseconds within the years 1-9999.
    (f"line {LAST}: created_at", field(LAST, "created_at", "2026-01-01")),
    (f"line {LAST}: created_at", field(LAST, "created_at", 1.5)),
    (f"line {LAST}: created_at", field(LAST, "created_at", True)),
    (f"line {LAST}: created_at", field(LAST, "created_at", 2**70)),
    (f"line {LAST}: created_at", field(LAST, "created_at", None)),
    (f"line {LAST}: created_at", drop(LAST, "created_at")),
    (f"line {LAST}: updated_at", field(LAST, "updated_at", "now")),
    (f"line {LAST}: updated_at", drop(LAST, "updated_at")),
    (f"line {LAST}: valid_from", field(LAST, "valid_from", -(2**63))),
    (f"line {LAST}: valid_to", field(LAST, "valid_to", "later")),
    (f"line {LAST}: expires_at", field(LAST, "expires_at", 1e20)),
    (f"line {LAST}: last_accessed_at", field(LAST, "last_accessed_at", "yesterday")),
    # Numbers.
    (f"line {LAST}: confidence", field(LAST, "confidence", 1.5)),
    (f"line {LAST}: confidence", field(LAST, "confidence", "high")),
    (f"line {LAST}: confidence", field(LAST, "confidence", NAN)),
    (f"line {LAST}: confidence", field(LAST, "confidence", True)),
    (f"line {LAST}: prior_confidence", field(LAST, "prior_confidence", 2)),
    (f"line {LAST}: access_count", field(LAST, "access_count", -1)),
    (f"line {LAST}: access_count", field(LAST, "access_count", 1.5)),
    (f"line {LAST}: access_count", field(LAST, "access_count", "3")),
    (f"line {LAST}: access_count", field(LAST, "access_count", 2**70)),
    # Supersession and the fingerprint.
    (f"line {LAST}: superseded_by", field(LAST, "superseded_by", "")),
    (f"line {LAST}: contradicted_by", field(LAST, "contradicted_by", 5)),
    (f"line {LAST}: fingerprint", field(LAST, "fingerprint", 5)),
    # Entities and relations ([kind, target id, created_at]).
    (f"line {LAST}: entities", field(LAST, "entities", "alice")),
    (f"line {LAST}: entities", field(LAST, "entities", [""])),
    (f"line {LAST}: entities", field(LAST, "entities", [5])),
    (f"line {LAST}: relations", field(LAST, "relations", "about")),
    (f"line {LAST}: relations", field(LAST, "relations", [["about"]])),
    (f"line {LAST}: relations", field(LAST, "relations", [["about", "f1"]])),
    (f"line {LAST}: relations", field(LAST, "relations", [["about", "", 0]])),
    (f"line {LAST}: relations", field(LAST, "relations", [[5, "f1", 0]])),
    (f"line {LAST}: relations", field(LAST, "relations", [["about", "f1", "t"]])),
    (f"line {LAST}: relations", field(LAST, "relations", [["about", "last", 0]])),
    # Vectors: base64 of little-endian float32, spans within the content.
    (f"line {LAST}: vectors", vectors("AAAA")),
    (f"line {LAST}: vectors", vectors([["start", "end"]])),
    (f"line {LAST}: vectors", one_vector(f32le=_vector([NAN] + [1.0] * (DIMS - 1)))),
    (f"line {LAST}: vectors", one_vector(f32le=_vector([float("inf")] * DIMS))),
    (f"line {LAST}: vectors", one_vector(f32le=_vector([0.0] * DIMS))),
    (f"line {LAST}: vectors", one_vector(f32le=_vector([1.0] * (DIMS - 1)))),
    (f"line {LAST}: vectors", one_vector(f32le=_vector([1.0] * DIMS) + "!")),
    (f"line {LAST}: vectors", one_vector(f32le="AAAAAAA")),
    (f"line {LAST}: vectors", one_vector(f32le=5)),
    (f"line {LAST}: vectors", one_vector(start=-1)),
    (f"line {LAST}: vectors", one_vector(end=21)),
    (f"line {LAST}: vectors", one_vector(start=5, end=4)),
    (f"line {LAST}: vectors", one_vector(start="0")),
    (f"line {LAST}: vectors", one_vector(extra=1)),
    (f"line {LAST}: vectors", vectors([{"start": 0, "end": 20}])),
    # The shape of a line.
    (f"line {LAST}: colour", field(LAST, "colour", "red")),
    (f"line {LAST}: type", field(LAST, "type", "memorie")),
    (f"line {LAST}: type", field(LAST, "type", "header")),
    (f"line {LAST}: type", drop(LAST, "type")),
    (f"line {LAST}", raw(LAST, "[1, 2]")),
    (f"line {LAST}", raw(LAST, '"memory"')),
    (f"line {LAST}", raw(LAST, '{"type": "memory", "id": "x"')),
    (f"line {LAST}", raw(LAST, "NaN")),
    (f"line {LAST}", raw(LAST, "[" * 100_000 + "]" * 100_000)),
    (f"line {LAST}", raw(LAST, '{"type": "memory", "id": ' + "1" * 5_000 + "}")),
    # Values JSON can hold but a set or an enum cannot (unhashable).
    (f"line {LAST}: id", field(LAST, "id", ["last"])),
    (f"line {LAST}: tier", field(LAST, "tier", ["semantic"])),
    (f"line {LAST}: level", field(LAST, "level", {})),
    (f"line {LAST}: tags", field(LAST, "tags", [["home"]])),
    (f"line {LAST}: entities", field(LAST, "entities", [{"a": 1}])),
    (f"line {LAST}: relations", field(LAST, "relations", [[["about"], "f1", 0]])),
    (f"line {LAST}: relations", field(LAST, "relations", [["about", ["f1"], 0]])),
    (f"line {LAST}: type", field(LAST, "type", ["memory"])),
    (f"line {LINK}: tiers", field(LINK, "tiers", [["semantic"]])),
    (f"line {LINK}: src", field(LINK, "src", {"a": 1})),
    (f"line {HEADER}", field(HEADER, "format", ["embedmind-jsonl"])),
    # Links.
    (f"line {LINK}: src", field(LINK, "src", "a//b")),
    (f"line {LINK}: src", drop(LINK, "src")),
    (f"line {LINK}: dst", field(LINK, "dst", None)),
    (f"line {LINK}: tiers", field(LINK, "tiers", "semantic")),
    (f"line {LINK}: tiers", field(LINK, "tiers", ["eternal"])),
    (f"line {LINK}: note", field(LINK, "note", 5)),
    (f"line {LINK}: note", field(LINK, "note", "\ud800")),
    (f"line {LINK}: created_at", drop(LINK, "created_at")),
    (f"line {LINK}: created_at", field(LINK, "created_at", "2026")),
    (f"line {LINK}: extra", field(LINK, "extra", 1)),
    # The header.
    (f"line {HEADER}", raw(HEADER, "[]")),
    (f"line {HEADER}", raw(HEADER, "not json at all")),
    (f"line {HEADER}", field(HEADER, "version", 2)),
    (f"line {HEADER}", field(HEADER, "format", "other-jsonl")),
    (f"line {HEADER}: type", field(HEADER, "type", "memory")),
    (f"line {HEADER}: embedder", field(HEADER, "embedder", "hashing-8")),
    (f"line {HEADER}: embedder", field(HEADER, "embedder", {"dims": 8})),
    (f"line {HEADER}: colour", field(HEADER, "colour", "red")),
]  # fmt: skip


def _text(lines: list[Any]) -> str:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


@pytest.fixture
def target() -> Any:
    """The store imported into: not empty, so "nothing written" means something."""
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as store:
        store.remember("already here", id="seed", namespace="other")
        store.link_namespaces("other", "shared")
        yield store


@pytest.mark.parametrize(
    ("name", "spoil"), BAD_IMPORT, ids=[f"{i}-{c[0]}" for i, c in enumerate(BAD_IMPORT)]
)
def test_import_rejects_a_bad_line_and_writes_nothing(
    export: list[dict[str, Any]], target: embedmind.Store, name: str, spoil: Spoil, figures: Figures
) -> None:
    lines: list[Any] = json.loads(json.dumps(export))
    spoil(lines)
    before = dump(target)
    with pytest.raises(embedmind.InvalidInputError) as info:
        target.import_jsonl(io.StringIO(_text(lines)))
    # Nested metadata errors name the path inside it: "line 521: metadata['x']".
    assert info.value.field.split("[")[0] == name, str(info.value)
    assert str(info.value).startswith(info.value.field + ": ")
    assert dump(target) == before
    figures(cases=1, leaks=0)


def test_an_id_of_another_namespace_is_a_conflict_before_anything_is_written(
    export: list[dict[str, Any]], target: embedmind.Store, figures: Figures
) -> None:
    lines: list[Any] = json.loads(json.dumps(export))
    lines[LAST - 1]["id"] = "seed"
    before = dump(target)
    with pytest.raises(embedmind.ConflictError, match=f"line {LAST}") as info:
        target.import_jsonl(io.StringIO(_text(lines)))
    assert info.value.id == "seed"
    assert dump(target) == before
    figures(cases=1, leaks=0)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("source", ""),
        ("source", "\n\n  \n"),
        (f"line {HEADER}", "\ufeffnot json\n"),
    ],
)
def test_an_empty_or_foreign_file_is_refused(target: embedmind.Store, name: str, text: str) -> None:
    before = dump(target)
    with pytest.raises(embedmind.InvalidInputError) as info:
        target.import_jsonl(io.StringIO(text))
    assert info.value.field == name
    assert dump(target) == before


def test_a_file_of_bytes_that_are_not_utf8(tmp_path: Path, target: embedmind.Store) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        b'{"type":"header","format":"embedmind-jsonl","version":1}\n{"content":"caf\xe9"}\n'
    )
    before = dump(target)
    with pytest.raises(embedmind.InvalidInputError) as info:
        target.import_jsonl(path)
    assert info.value.field == "line 2"
    assert dump(target) == before


# -- controls: awkward but valid files import -----------------------------------------------


def test_the_unspoilt_export_imports(export: list[dict[str, Any]], target: embedmind.Store) -> None:
    assert target.import_jsonl(io.StringIO(_text(export))) == MEMORIES
    last = target.get("last")
    assert last.metadata == {"k": [1, {"x": None}]} and last.tags == ("home",)
    assert [r.memory.id for r in target.related("last")] == ["f1"]


def test_optional_fields_may_be_left_out(
    export: list[dict[str, Any]], target: embedmind.Store
) -> None:
    lines: list[Any] = json.loads(json.dumps(export))
    for name in (
        "metadata", "tags", "agent", "session_id", "valid_to", "expires_at", "superseded_by",
        "access_count", "last_accessed_at", "fingerprint", "contradicted_by",
        "prior_confidence", "entities", "relations", "vectors",
    ):  # fmt: skip
        del lines[LAST - 1][name]
    del lines[LINK - 1]["tiers"]
    del lines[LINK - 1]["note"]
    del lines[HEADER - 1]["embedder"]
    assert target.import_jsonl(io.StringIO(_text(lines))) == MEMORIES
    last = target.get("last")
    assert last.metadata == {} and last.tags == () and last.access_count == 0
    assert target.recall("porto", mode="vector").ids


def test_vectors_that_are_not_unit_length_are_normalised(
    export: list[dict[str, Any]], target: embedmind.Store
) -> None:
    lines: list[Any] = json.loads(json.dumps(export))
    lines[LAST - 1]["vectors"] = [
        {"start": 0, "end": 20, "f32le": _vector([3.0] + [0.0] * (DIMS - 1))}
    ]
    assert target.import_jsonl(io.StringIO(_text(lines))) == MEMORIES
    stored = target.vectors(["last"])["last"]
    assert stored.tolist() == [1.0] + [0.0] * (DIMS - 1)


def test_vectors_are_not_read_when_the_store_reembeds(export: list[dict[str, Any]]) -> None:
    lines: list[Any] = json.loads(json.dumps(export))
    lines[LAST - 1]["vectors"] = [{"start": 0, "end": 20, "f32le": _vector([NAN] * DIMS)}]
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS * 2)) as other:
        assert other.import_jsonl(io.StringIO(_text(lines)), reembed=True) == MEMORIES
    with embedmind.Store.open(":memory:", embedder=None) as text_only:
        assert text_only.import_jsonl(io.StringIO(_text(lines))) == MEMORIES


# -- any JSON value in any field --------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    line=st.sampled_from([HEADER, FIRST, LAST, LINK]),
    name=st.sampled_from(
        sorted(
            _MEMORY_KEYS | {"src", "dst", "tiers", "note", "format", "version", "embedder", "new"}
        )
    ),
    value=JSON_VALUES,
)
# Another model's identity, however spelt, is an EmbedderMismatchError (found by this test).
@example(line=HEADER, name="embedder", value={"": ""})
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_json_value_in_any_field_is_accepted_or_refused_cleanly(
    export: list[dict[str, Any]], line: int, name: str, value: Any
) -> None:
    lines: list[Any] = json.loads(json.dumps(export))
    lines[line - 1][name] = value
    with embedmind.Store.open(":memory:", embedder=HashingEmbedder(DIMS)) as target:
        target.remember("already here", id="seed", namespace="other")
        before = dump(target)
        # Anything but these (a raw TypeError, KeyError, OverflowError, a
        # StorageError from SQLite) fails the test. A header's embedder that is an
        # object of strings but not this store's identity is another model's.
        refusals: tuple[type[Exception], ...] = (
            embedmind.InvalidInputError,
            embedmind.ConflictError,
        )
        if (line, name) == (HEADER, "embedder"):
            refusals += (embedmind.EmbedderMismatchError,)
        try:
            target.import_jsonl(io.StringIO(_text(lines)))
        except refusals:
            assert dump(target) == before
        else:
            assert target.stats().live == MEMORIES + 1
