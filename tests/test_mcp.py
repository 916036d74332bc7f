"""`embedmind mcp`: driven by the MCP SDK's own stdio client, beside the CLI."""

from __future__ import annotations

import asyncio
import itertools
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the optional mcp extra is not installed")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

EXE = str(Path(sys.executable).with_name("embedmind"))


def _server(store: Path, *extra: str) -> StdioServerParameters:
    args = ["--store", str(store), "--embedder", "hashing", "mcp", "--agent", "test-agent", *extra]
    return StdioServerParameters(command=EXE, args=args)


async def _call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, Any]:
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text
    return False, json.loads(text) if text else None


def _run(store: Path, body: Any, *extra: str) -> Any:
    async def main() -> Any:
        async with (
            stdio_client(_server(store, *extra)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)

    return asyncio.run(main())


@pytest.mark.timeout(120)
def test_tools_remember_recall_supersede_forget_stats(tmp_path: Path) -> None:
    store = tmp_path / "agent.mind"

    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"remember", "recall", "get", "forget", "related", "lineage", "stats"} <= set(tools)
        assert "recall" in (tools["remember"].description or "") or tools["remember"].description
        error, first = await _call(
            session, "remember", content="Alice drinks green tea", metadata={"topic": "drinks"}
        )
        assert not error
        assert first["memory"]["namespace"] == "agents/me"
        error, second = await _call(
            session, "remember", content="Alice drinks green tea every morning"
        )
        assert second["similar"] and second["similar"][0]["id"] == first["memory"]["id"]
        error, newer = await _call(session, "remember", content="Alice switched to coffee",
                                   supersedes=[first["memory"]["id"]])  # fmt: skip
        assert not error
        error, found = await _call(session, "recall", query="what does alice drink", k=5)
        ids = [h["id"] for h in found["hits"]]
        assert newer["memory"]["id"] in ids and first["memory"]["id"] not in ids
        error, history = await _call(session, "lineage", id=newer["memory"]["id"])
        assert [m["id"] for m in history["older"]] == [first["memory"]["id"]]
        error, bad = await _call(session, "recall", query="x", k=0)  # a bad argument
        assert error and "k" in bad
        error, gone = await _call(session, "forget", id=second["memory"]["id"])
        assert gone["forgotten"] is True
        error, counts = await _call(session, "stats")  # still serving after the error
        assert counts["live"] == 2 and counts["agent"] == "test-agent"

    _run(store, body, "--namespace", "agents/me")
    import embedmind

    with embedmind.Store.open(store, embedder=None) as check:
        memory = next(iter(check.iter(include_superseded=True)))
        assert memory.agent == "test-agent" and memory.session_id


@pytest.mark.timeout(120)
def test_namespace_scoping_refuses_and_leaks_nothing(tmp_path: Path) -> None:
    import embedmind

    store = tmp_path / "scoped.mind"
    with embedmind.Store.open(store, embedder="hashing") as s:
        secret = s.remember("the launch code is 0000", namespace="other/team", id="secret")

    async def body(session: ClientSession) -> None:
        error, message = await _call(session, "recall", query="launch code", namespace="other/team")
        assert error and "outside" in message
        error, own = await _call(session, "recall", query="launch code")
        assert own["hits"] == []
        error, _ = await _call(session, "get", id=secret.id)
        assert error
        error, _ = await _call(session, "remember", content="x", namespace="other")
        assert error
        error, counts = await _call(session, "stats")
        assert "other/team" not in counts["by_namespace"]

    _run(store, body, "--namespace", "me")


@pytest.mark.timeout(120)
def test_recall_takes_subtrees_and_lists_inside_the_server_namespace_only(tmp_path: Path) -> None:
    """A subtree or a list inside the allowed set reads what Python's recall reads; above it, no."""
    import embedmind

    store = tmp_path / "tree.mind"
    with embedmind.Store.open(store, embedder="hashing") as s:
        for namespace in ("agents/me", "agents/me/tabs", "agents/me/notes", "agents/you"):
            s.remember(f"tabs or spaces, said {namespace}", namespace=namespace, id=namespace)
        expected = {
            scope: sorted(s.recall("tabs", k=10, namespace=scope, mode="text").ids)
            for scope in ("agents/me/*", ("agents/me/tabs", "agents/me/notes/*"))
        }

    async def body(session: ClientSession) -> None:
        for scope, ids in expected.items():
            arg = scope if isinstance(scope, str) else list(scope)
            error, found = await _call(session, "recall", query="tabs", k=10, namespace=arg)
            assert not error, found
            assert sorted(h["id"] for h in found["hits"]) == ids
        for outside in ("agents/*", "agents/you", ["agents/me/tabs", "agents/*"], "*", []):
            error, message = await _call(session, "recall", query="tabs", namespace=outside)
            assert error and "namespace" in message, (outside, message)

    _run(store, body, "--namespace", "agents/me")


@pytest.mark.timeout(120)
def test_server_and_cli_share_one_store_file(tmp_path: Path) -> None:
    store = tmp_path / "shared.mind"
    cli = [EXE, "--store", str(store), "--json"]

    async def body(session: ClientSession) -> None:
        subprocess.run([*cli, "remember", "written by the CLI about zebras", "--namespace", "default"],
                       check=True, capture_output=True)  # fmt: skip
        error, found = await _call(session, "recall", query="zebras")
        assert [h["content"] for h in found["hits"]] == ["written by the CLI about zebras"]
        await _call(session, "remember", content="written by the server about giraffes")
        out = subprocess.run(
            [*cli, "recall", "giraffes", "--mode", "text"],
            check=True,
            capture_output=True,
            text=True,
        )
        assert [h["memory"]["content"] for h in json.loads(out.stdout)["hits"]] == [
            "written by the server about giraffes"
        ]

    _run(store, body)


@pytest.mark.timeout(120)
def test_lineage_leaks_no_version_outside_the_allowed_namespaces(tmp_path: Path) -> None:
    import embedmind

    store = tmp_path / "chain.mind"
    with embedmind.Store.open(store, embedder="hashing") as s:
        s.remember("Alice drinks green tea", namespace="me", id="v1")
        s.remember("Alice drinks black tea", namespace="me", id="v2", supersedes=["v1"])
        s.remember("Alice drinks coffee", namespace="me", id="v3", supersedes=["v2"])
        s.remember("Alice drinks water", namespace="me", id="v4", supersedes=["v3"])
        # Moves make the chain cross namespaces: v4 stays in reach (me/sub is in
        # the default allow-list), v2 now lives outside it.
        assert s.move(["v4"], "me", "me/sub") == 1
        assert s.move(["v2"], "me", "other/team") == 1
        assert s.get("v2") is not None and s.get("v2").namespace == "other/team"

    async def body(session: ClientSession) -> None:
        error, history = await _call(session, "lineage", id="v1")
        assert not error, history
        assert [m["id"] for m in history["newer"]] == ["v3", "v4"]
        error, history = await _call(session, "lineage", id="v4")
        assert not error, history
        assert [m["id"] for m in history["older"]] == ["v3", "v1"]
        error, first = await _call(session, "get", id="v1")
        for shown in (history, first):
            text = json.dumps(shown)
            assert "v2" not in text and "black tea" not in text and "other/team" not in text
        error, _ = await _call(session, "lineage", id="v2")
        assert error

    _run(store, body, "--namespace", "me")


@pytest.mark.timeout(120)
def test_allow_list_is_compared_in_nfc(tmp_path: Path) -> None:
    import embedmind

    nfc, nfd = "caf\u00e9", "cafe\u0301"
    store = tmp_path / "nfc.mind"
    with embedmind.Store.open(store, embedder="hashing") as s:
        s.remember("the espresso machine is on the left", namespace=nfc, id="here")
        s.remember("the launch code is 0000", namespace="other", id="secret")

    async def body(session: ClientSession) -> None:
        error, found = await _call(session, "get", id="here")  # stored in NFC
        assert not error, found
        assert found["namespace"] == nfc
        error, hits = await _call(session, "recall", query="espresso machine", namespace=nfd)
        assert not error and [h["id"] for h in hits["hits"]] == ["here"]
        error, counts = await _call(session, "stats")
        assert counts["by_namespace"] == {nfc: 1}
        error, _ = await _call(session, "get", id="secret")
        assert error

    # The allow-list is spelled in NFD, as a shell or a config file may hand it over.
    _run(store, body, "--namespace", nfd, "--allow", nfd, "--allow", f"{nfd}/*")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.timeout(120)
def test_unknown_ids_are_echoed_version_is_set_and_results_are_compact(tmp_path: Path) -> None:
    import embedmind

    store = tmp_path / "habits.mind"
    with embedmind.Store.open(store, embedder="hashing") as s:
        s.remember("the launch code is 0000", namespace="other", id="secret-id")
        s.remember("Alice drinks green tea, every morning", namespace="me", id="tea")
        s.remember("Alice drinks coffee", namespace="me", id="coffee", relations=[("rel", "tea")])

    async def main() -> None:
        async with (
            stdio_client(_server(store, "--namespace", "me")) as (read, write),
            ClientSession(read, write) as session,
        ):
            started = await session.initialize()
            assert started.server_info.name == "embedmind"
            assert started.server_info.version == embedmind.__version__
            for tool in ("get", "forget", "related", "lineage"):
                # Missing and out-of-reach ids read the same, and name the id asked for.
                for unknown in ("no-such-id", "secret-id"):
                    error, message = await _call(session, tool, id=unknown)
                    assert error and repr(unknown) in message, message
                    assert "requested" not in message and "other" not in message
            for tool, arguments in (
                ("get", {"id": "tea"}),
                ("recall", {"query": "what does alice drink"}),
                ("stats", {}),
                ("related", {"id": "coffee"}),
            ):
                result = await session.call_tool(tool, arguments)
                assert not result.is_error and len(result.content) == 1, result
                text = result.content[0].text
                assert "\n" not in text and text == _compact(json.loads(text)), text
            result = await session.call_tool("related", {"id": "coffee"})
            assert [r["id"] for r in json.loads(result.content[0].text)] == ["tea"]

    asyncio.run(main())


@pytest.mark.timeout(120)
def test_global_options_after_mcp(tmp_path: Path) -> None:
    store = tmp_path / "after.mind"
    params = StdioServerParameters(
        command=EXE,
        args=["mcp", "--namespace", "me", "--store", str(store), "--embedder", "hashing"],
        cwd=str(tmp_path),
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await _call(session, "remember", content="kept in the store named after mcp")
            return await _call(session, "stats")

    error, counts = asyncio.run(main())
    assert not error and counts["by_namespace"] == {"me": 1}
    assert sorted(p.name for p in tmp_path.glob("*.mind")) == ["after.mind"]


@pytest.mark.timeout(120)
def test_recall_takes_temporal_widen_and_latest(tmp_path: Path) -> None:
    # The recall tool had no `temporal`; `widen` and `latest` are new options.
    store = tmp_path / "options.mind"

    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        schema = tools["recall"].input_schema["properties"]
        assert {"temporal", "widen", "latest"} <= set(schema)
        for content in ("Bob lives in Paris; Bob lives well", "Bob lives in Rome"):
            error, _ = await _call(session, "remember", content=content)
            assert not error
        query = "where does bob live now?"
        error, plain = await _call(session, "recall", query=query, k=2, latest=False)
        assert not error
        error, latest = await _call(session, "recall", query=query, k=2, latest=True)
        assert not error
        # Both memories are the cluster; the newer one goes first.
        assert latest["hits"][0]["content"] == "Bob lives in Rome"
        assert {h["id"] for h in latest["hits"]} == {h["id"] for h in plain["hits"]}
        for options in ({"temporal": True}, {"widen": True}):
            error, found = await _call(session, "recall", query="bob in May 2023", **options)
            assert not error and found["hits"]

    _run(store, body)


class _Wire:
    """The server spoken to in raw JSON lines, as an adversarial client would.

    The SDK's client cannot send ``NaN``, ``1e400`` or broken JSON; this can.
    Lines are read by a thread, so every wait has a timeout.
    """

    def __init__(self, store: Path) -> None:
        args = [EXE, "--store", str(store), "--embedder", "hashing", "mcp", "--namespace", "me"]
        self.process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.ids = itertools.count(1)
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "wire", "version": "1"}})  # fmt: skip
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 10.0) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.lines.get(timeout=timeout))  # or queue.Empty
        return answer

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                              "params": params}).encode())  # fmt: skip
        return self.answer()

    def call(self, tool: str, arguments: str) -> tuple[bool, str]:
        """Call ``tool`` with ``arguments`` as raw JSON text (so NaN and 1e400 reach it)."""
        line = (
            f'{{"jsonrpc":"2.0","id":{next(self.ids)},"method":"tools/call",'
            f'"params":{{"name":"{tool}","arguments":{arguments}}}}}'
        )
        self.send(line.encode())
        result = self.answer()["result"]
        return bool(result.get("isError")), result["content"][0]["text"]

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()  # end of input: the server exits
        try:
            self.process.wait(timeout=10)
        finally:
            self.process.kill()
            self.reader.join(timeout=10)  # it reads to the end of output first
            self.process.stdout.close()


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Wire]:
    """One server for the tests below (each starts by counting what is stored)."""
    client = _Wire(tmp_path_factory.mktemp("wire") / "wire.mind")
    yield client
    client.close()


BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e400", "1e300", "-1e300", "-1", "0"]
VALID = {"min_score": {"0"}}  # a probability threshold of 0 keeps every hit
ALSO_BAD = {"min_score": ["1.5", "-0.001", "1.0000001"]}  # scores lie in 0-1


def _live(wire: _Wire) -> int:
    error, text = wire.call("stats", "{}")
    assert not error, text
    return int(json.loads(text)["live"])


@pytest.mark.timeout(120)
def test_every_numeric_argument_is_refused_with_a_typed_reason(wire: _Wire) -> None:
    tools = wire.request("tools/list", {})["result"]["tools"]
    numeric = []
    for tool in tools:
        schema = tool["inputSchema"]
        for name, spec in schema["properties"].items():
            kinds = {spec.get("type")} | {option.get("type") for option in spec.get("anyOf", [])}
            if kinds & {"number", "integer"}:
                base = {r: "x" for r in schema.get("required", []) if r != name}
                numeric.append((tool["name"], name, base))
    assert {(tool, name) for tool, name, _ in numeric} >= {
        ("remember", "ttl_seconds"),
        ("recall", "k"),
        ("recall", "min_score"),
    }
    before = _live(wire)
    for tool, name, base in numeric:
        for bad in [
            *(b for b in BAD_NUMBERS if b not in VALID.get(name, ())),
            *ALSO_BAD.get(name, []),
        ]:
            arguments = json.dumps(base)[:-1] + (", " if base else "") + f'"{name}": {bad}}}'
            error, text = wire.call(tool, arguments)
            assert error and f"InvalidInputError: {name}: " in text, (tool, name, bad, text)
    assert _live(wire) == before  # nothing was written


MALFORMED = {
    "relations": ['[["rel", "a", "extra"]]', '[["rel"]]', "[[1, 2]]", '["rel"]', '"rel"', "{}"],
    "supersedes": ['"an-id"', "[1]", "{}"],
    "tags": ['"tag"', "[[]]", "[1]"],
    "entities": ['"name"', "[{}]"],
    "metadata": ["[1]", '"text"'],
    "namespace": ["[]", "1"],
    "content": ["1", "null", "[]"],
}


@pytest.mark.timeout(120)
def test_a_malformed_argument_is_refused_with_its_name_and_nothing_is_written(
    wire: _Wire,
) -> None:
    before = _live(wire)
    error, text = wire.call("remember", '{"content": "the target of a relation"}')
    assert not error, text
    target = json.loads(text)["memory"]["id"]
    for name, values in MALFORMED.items():
        for value in values:
            content = "" if name == "content" else '"content": "x", '
            error, text = wire.call("remember", f'{{{content}"{name}": {value}}}')
            assert error and f"InvalidInputError: {name}" in text, (name, value, text)
    # A well-formed relation is kept, never dropped.
    error, text = wire.call("remember", f'{{"content": "y", "relations": [["cites", "{target}"]]}}')
    assert not error, text
    error, text = wire.call("related", f'{{"id": "{target}"}}')
    assert [(r["kind"], r["content"]) for r in json.loads(text)] == [("cites", "y")]
    assert _live(wire) == before + 2


@pytest.mark.timeout(120)
def test_a_line_the_transport_cannot_parse_is_answered_and_serving_goes_on(wire: _Wire) -> None:
    before = _live(wire)
    deep = "[" * 5000 + "]" * 5000
    nested = (
        '{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"remember",'
        f'"arguments":{{"content":"x","metadata":{{"a":{deep}}}}}}}}}'
    )
    for line, code in [
        (nested.encode(), -32700),  # deeper than the JSON parser goes
        (deep.encode(), -32700),
        (b"{not json", -32700),
        (b"\xff\xfe not utf-8", -32700),
        (b"[1, 2]", -32600),  # JSON, but no JSON-RPC message
        (b'{"id": 5}', -32600),
    ]:
        wire.send(line)
        answer = wire.answer(timeout=5)
        assert answer["id"] is None and answer["error"]["code"] == code, (line[:40], answer)
    assert _live(wire) == before  # the server still answers


@pytest.mark.timeout(120)
def test_recall_scores_are_probabilities_and_min_score_filters_them(wire: _Wire) -> None:
    for text in ["Alice prefers green tea", "Bob drinks espresso", "Carol likes hiking"]:
        error, answer = wire.call("remember", json.dumps({"content": text}))
        assert not error, answer
    query = '"query": "what does alice drink", "k": 50'
    error, text = wire.call("recall", f"{{{query}}}")
    assert not error, text
    full = json.loads(text)["hits"]
    scores = [hit["score"] for hit in full]
    assert full and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    for threshold in sorted({0.0, 1.0, *scores, *(s + 1e-9 for s in scores if s < 1.0)}):
        error, text = wire.call("recall", f'{{{query}, "min_score": {threshold!r}}}')
        assert not error, text
        # Exactly the unthresholded hits scoring at least the threshold, ranks unchanged.
        assert json.loads(text)["hits"] == [h for h in full if h["score"] >= threshold]
