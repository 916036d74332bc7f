"""The MCP server class of ``embedmind mcp``: every request gets an answer that says why.

The SDK's ``MCPServer`` leaves two kinds of bad input without a reason:

* A line its stdio transport cannot parse (not JSON, JSON nested deeper than
  its parser's limit of about 200 levels, or JSON that is no JSON-RPC
  message) is dropped, so the client waits for ever. Here it is answered with
  a JSON-RPC error of ``id`` null, as JSON-RPC 2.0 asks when the id cannot be
  read: -32700 (parse error) for text that is not JSON, -32600 (invalid
  request) for the rest. The server then serves the next line.
* Tool arguments that do not fit the tool's signature (a string for a list, a
  relation of three items) are refused by the SDK with pydantic's report; here
  they read like every other refusal, ``InvalidInputError: <argument>: <why>``.

Imported only once the ``mcp`` package is known to be installed.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from embedmind.errors import InvalidInputError


class EmbedmindMCPServer(MCPServer):
    """``MCPServer`` that answers unparseable lines and explains refused arguments."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call a tool; arguments that do not fit its signature are an InvalidInputError.

        Raises:
            ToolError: As the SDK raises it, worded as an InvalidInputError when
                the arguments did not validate.
        """
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if not isinstance(e.__cause__, ValidationError):
                raise
            reason = argument_errors(e.__cause__)
            raise ToolError(
                f"Error executing tool {name}: InvalidInputError: {reason}"
            ) from e.__cause__

    async def run_stdio_async(self) -> None:
        """Serve on stdio, answering each line the transport cannot parse."""
        async with stdio_server() as (read_stream, write_stream):
            server = self._lowlevel_server
            await server.run(
                AnsweringParseErrors(read_stream, write_stream),
                write_stream,
                server.create_initialization_options(),
            )


def argument_errors(error: ValidationError) -> str:
    """Pydantic's argument errors as InvalidInputError messages, joined by ``"; "``.

    The refused values are not echoed: the argument's path and the reason say
    what to change, and a value can be large.
    """
    reasons = []
    for item in error.errors(include_url=False, include_input=False):
        field = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in item["loc"]
        )
        message = str(item["msg"])
        reasons.append(str(InvalidInputError(field.lstrip(".") or "arguments", _lower(message))))
    return "; ".join(reasons)


def _lower(message: str) -> str:
    return message[:1].lower() + message[1:]


class AnsweringParseErrors:
    """The transport's read stream, minus the parse failures it answers itself.

    The stdio transport hands a line it cannot parse to the server as an
    exception, and the SDK's dispatcher only logs it; this stream writes the
    JSON-RPC error for it and reads on.
    """

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message, which the dispatcher restores."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message the transport parsed; failures in between are answered."""
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(parse_error(item)))

    async def aclose(self) -> None:
        """Close the transport's read stream."""
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringParseErrors:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringParseErrors:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def parse_error(error: Exception) -> mcp_types.JSONRPCError:
    """The JSON-RPC answer to a line the transport could not turn into a message."""
    not_json = isinstance(error, ValidationError) and any(
        item["type"] == "json_invalid" for item in error.errors()
    )
    if not_json:
        code, title = mcp_types.PARSE_ERROR, "Parse error"
    else:
        code, title = mcp_types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    detail = _first_reason(error)
    message = f"{title}: {detail}" if detail else title
    return mcp_types.JSONRPCError(
        jsonrpc="2.0", id=None, error=mcp_types.ErrorData(code=code, message=message)
    )


def _first_reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        errors = error.errors(include_url=False, include_input=False)
        return str(errors[0]["msg"]) if errors else ""
    return type(error).__name__
