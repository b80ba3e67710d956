"""``kb mcp``'s stdio transport: the SDK's, with an answer to every line it cannot read.

The SDK's stdio transport reads one JSON-RPC message per line; a line that is not JSON,
or JSON that is no JSON-RPC message, becomes an exception on its read stream, which the
server's dispatcher logs at debug level and drops: the client gets no answer and the
user no word. :class:`AnsweredReadStream` sits between the transport and the server and
answers such a line as JSON-RPC 2.0 prescribes, on stdout: a parse error (-32700) for
a line that is not JSON, an invalid request (-32600) for JSON that is no message, with
``id`` null (the request's own id when the object is a request whose id is readable) and
the line's number in ``data``; it also prints one line on stderr naming the input line
and what was wrong, and the server goes on serving. A blank line holds no message and is
skipped. The SDK offers no public way to run an :class:`MCPServer` over streams of one's
own, so :func:`serve_stdio` reaches its low-level server; where a later SDK has none,
the SDK's own stdio loop serves (bad lines unanswered again, nothing else lost).
"""

from __future__ import annotations

import re
import sys
from contextlib import suppress
from types import TracebackType
from typing import Any, Optional

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

#: How a reason names a JSON value that is no object.
_JSON_TYPES = {list: "an array", str: "a string", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


def _whole(errors: list[dict[str, Any]]) -> tuple[bool, Any]:
    """Whether the errors show the JSON value validated, and that value: a shape's
    missing field names the whole object, a wrong type the whole value."""
    for err in errors:
        loc = err.get("loc", ())
        if len(loc) == 1 or (len(loc) == 2 and err.get("type") == "missing"):
            return True, err.get("input")
    return False, None


def _shape(value: dict[str, Any]) -> str:
    """The message shape an object claims by its keys."""
    if "method" in value:
        return "JSONRPCRequest" if "id" in value else "JSONRPCNotification"
    if "error" in value:
        return "JSONRPCError"
    return "JSONRPCResponse" if "result" in value else "JSONRPCRequest"


def describe(exc: Exception) -> tuple[int, str, Any]:
    """What was wrong with a line the SDK's transport could not read (``exc``, its
    exception): the JSON-RPC error code, a short reason, and the id to answer with."""
    if not isinstance(exc, ValidationError):
        return PARSE_ERROR, f"it could not be read ({type(exc).__name__}: {exc})", None
    errors = exc.errors()
    bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if bad_json is not None:
        why = str(bad_json.get("msg", "")).removeprefix("Invalid JSON: ")
        # The parser counts the line's own newline: "line 2 column 0" is its end.
        why = re.sub(r" at line (\d+) column (\d+)$",
                     lambda m: f" at column {m[2]}" if m[1] == "1" else " at the end of the line", why)
        text = bad_json.get("input")
        if isinstance(text, str) and "\ufffd" in text:
            # the transport decodes stdin as UTF-8 with replacement characters
            return PARSE_ERROR, f"it is not UTF-8 text, so not JSON ({why})", None
        return PARSE_ERROR, f"it is not JSON ({why})", None
    found, value = _whole(errors)
    if found and not isinstance(value, dict):
        what = _JSON_TYPES.get(type(value), "a JSON value")
        batch = " (MCP takes no batches)" if isinstance(value, list) else ""
        return INVALID_REQUEST, f"it is {what}{batch}, not a JSON-RPC message object", None
    shape = _shape(value) if isinstance(value, dict) else "JSONRPCRequest"
    mine = [e for e in errors if tuple(e.get("loc", ()))[:1] == (shape,)] or errors
    fields = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'message'}: {e['msg']}"
                       for e in mine[:3])
    rid = value.get("id") if isinstance(value, dict) else None
    answer_id = rid if shape == "JSONRPCRequest" and isinstance(rid, (int, str)) \
        and not isinstance(rid, bool) else None
    name = shape.removeprefix("JSONRPC").lower()
    return INVALID_REQUEST, f"it is not a valid JSON-RPC 2.0 {name} ({fields})", answer_id


class AnsweredReadStream:
    """The transport's read stream with its unreadable lines answered and left out:
    the server reads only messages. ``line`` is the number of the last line read."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write
        self.line = 0

    @property
    def last_context(self) -> Any:
        """The sender context of the last item (the SDK restores it per message)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message the transport read; each unreadable line before it is answered."""
        while True:
            item = await self._inner.receive()
            self.line += 1
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def _answer(self, exc: Exception) -> None:
        if isinstance(exc, ValidationError) and any(
                e.get("type") == "json_invalid" and isinstance(e.get("input"), str)
                and not e["input"].strip() for e in exc.errors()):
            return  # a blank line: no message, nothing to answer
        code, why, rid = describe(exc)
        kind, title = ("parse error", "Parse error") if code == PARSE_ERROR \
            else ("invalid request", "Invalid Request")  # JSON-RPC 2.0's own names
        message = f"{title}: input line {self.line} was not read: {why}"
        err = JSONRPCError(jsonrpc="2.0", id=rid,
                           error=ErrorData(code=code, message=message, data={"line": self.line}))
        with suppress(OSError, ValueError):  # no stderr left: the answer still goes out
            sys.stderr.write(f"kb mcp: input line {self.line} was not read: {why}; answered "
                             f"with a JSON-RPC {kind} ({code}), still serving\n")
            sys.stderr.flush()
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # the client left
            await self._write.send(SessionMessage(err))

    async def aclose(self) -> None:
        """Close the transport's read stream."""
        await self._inner.aclose()

    def close(self) -> None:
        """Close the transport's read stream."""
        self._inner.close()

    def __aiter__(self) -> "AnsweredReadStream":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "AnsweredReadStream":
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc_val: Optional[BaseException], exc_tb: Optional[TracebackType]) -> None:
        await self.aclose()


async def serve_stdio(server: MCPServer, fallback: Any) -> None:
    """Serve ``server`` over the SDK's stdio transport, answering unreadable lines.
    ``fallback`` (the SDK's own ``run_stdio_async``) serves when this SDK's server has
    no low-level server to drive."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not hasattr(lowlevel, "run"):
        await fallback()
        return
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(AnsweredReadStream(read_stream, write_stream), write_stream,
                           lowlevel.create_initialization_options())
