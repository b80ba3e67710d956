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

Two kinds of line parse as JSON elsewhere but hold no text, and are refused here with the
request's id when it can be read: a line whose bytes are not UTF-8 (the SDK decodes stdin
with replacement characters, so such a request ran with U+FFFD in its arguments; kb reads
stdin itself, :func:`claim_stdin`, keeping the undecodable bytes visible) and a string
holding a lone surrogate escape (``"\\ud800"``, valid RFC 8259 grammar but no Unicode
text; the SDK's parser refuses it as a parse error with id null).

A request whose ``id`` is null, a number that is no integer (``5.5``), a boolean, an object
or an array passes the SDK's parser as a *notification* (pydantic ignores the id it cannot
take): it was run or dropped without an answer, and the client waited forever. JSON-RPC 2.0
makes a message with an ``id`` member a request, and MCP takes only a string or an integer
id, so :class:`AnsweredReadStream` answers it with an invalid request (-32600) and id null:
JSON-RPC's answer when the request's id cannot be read (echoing ``5.5`` would give the
client an id MCP has no type for). Nothing of it runs. A message without an ``id`` member
is a notification and stays unanswered. This needs the line itself, which only kb's own
reading of stdin (:class:`LineTap`) keeps; the SDK's own stdio loop (the fallback) runs
such a line as before.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from types import TracebackType
from typing import Any, BinaryIO, Optional

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError,
                       JSONRPCNotification, JSONRPCRequest, JSONRPCResponse)
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


#: Where :func:`claim_stdin`'s decoding left a byte that is not UTF-8 (surrogateescape).
_RAW_BYTE = re.compile("[\udc80-\udcff]")
#: Any surrogate code point: in parsed JSON only a lone escape (\uD800 to \uDFFF) gives one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _request_id(value: Any) -> Any:
    """The id to answer a message object with: a request's (it has ``method``) integer or
    string id that is itself text; else None (JSON-RPC's null)."""
    if not isinstance(value, dict) or "method" not in value:
        return None
    rid = value.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    return None if isinstance(rid, str) and _SURROGATE.search(rid) else rid


def _loose_json(text: str) -> Any:
    """``text`` parsed by Python's own JSON reader, which takes lone surrogate escapes and
    undecoded bytes as they are (only to find a request's id); None when it cannot."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _lone_surrogate(value: Any) -> Optional[str]:
    """The first lone surrogate in any key or string of the JSON ``value``, as its escape
    (``\\ud800``); None when every string is text."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            hit = _SURROGATE.search(v)
            if hit:
                return f"\\u{ord(hit[0]):04x}"
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def describe(exc: Exception) -> tuple[int, str, Any]:
    """What was wrong with a line the SDK's transport could not read (``exc``, its
    exception): the JSON-RPC error code, a short reason, and the id to answer with
    (a request's own id whenever it can be read, else None)."""
    if not isinstance(exc, ValidationError):
        return PARSE_ERROR, f"it could not be read ({type(exc).__name__}: {exc})", None
    errors = exc.errors()
    for err in errors:
        text = err.get("input")
        hit = _RAW_BYTE.search(text) if err.get("type") == "string_unicode" \
            and isinstance(text, str) else None
        if hit is None:
            continue
        # :func:`claim_stdin` kept the bytes that are not UTF-8 as U+DC80-U+DCFF: refuse the
        # line rather than run it with replacement characters in its arguments
        where = f"byte 0x{ord(hit[0]) - 0xDC00:02x} at column {hit.start() + 1}"
        return (PARSE_ERROR, f"it is not UTF-8 text, so not JSON ({where}); nothing of it was run",
                _request_id(_loose_json(text)))
    bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if bad_json is not None:
        why = str(bad_json.get("msg", "")).removeprefix("Invalid JSON: ")
        # The parser counts the line's own newline: "line 2 column 0" is its end.
        why = re.sub(r" at line (\d+) column (\d+)$",
                     lambda m: f" at column {m[2]}" if m[1] == "1" else " at the end of the line", why)
        text = bad_json.get("input")
        if isinstance(text, str) and "\ufffd" in text:
            # the SDK's own transport (the fallback) decodes stdin with replacement characters
            return PARSE_ERROR, f"it is not UTF-8 text, so not JSON ({why})", None
        loose = _loose_json(text) if isinstance(text, str) else None
        lone = _lone_surrogate(loose)
        if lone is not None:
            # RFC 8259 lets a string escape half of a surrogate pair (a cut emoji); it is no
            # Unicode text, so no argument can hold it. The id is readable: answer with it.
            return (INVALID_REQUEST, f"a string in it holds the lone surrogate escape {lone} "
                    f"({why}), which is no Unicode text; nothing of it was run",
                    _request_id(loose))
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


def id_problem(line: str) -> Optional[str]:
    """Why ``line``, which the SDK read as a notification, is a request kb cannot answer
    by its id (see the module docstring); None when it has no ``id`` member (a notification)."""
    value = _loose_json(line)
    if not isinstance(value, dict) or "id" not in value:
        return None
    rid = value["id"]
    if isinstance(rid, float):  # 5.0 and 1e3 too: the SDK takes no integer written so
        what = f"the number {json.dumps(rid)}, " + (
            "written with a fraction or an exponent" if rid.is_integer() else "not an integer")
    elif isinstance(rid, dict):
        what = "an object"
    else:
        what = _JSON_TYPES.get(type(rid), "a JSON value")
    return (f"it is not a valid JSON-RPC 2.0 request (its id is {what}; MCP takes a string "
            "or an integer id, and a notification has no id member); nothing of it was run")


class LineTap:
    """The transport's input lines (an async iterable of text lines, as the SDK's
    ``stdio_server`` takes for ``stdin``), each kept in :attr:`pending` until
    :class:`AnsweredReadStream` takes the message the SDK made of it: the SDK reads one
    item per line, so the first pending line is the one behind the next item."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines
        self._it: Optional[AsyncIterator[str]] = None
        self.pending: deque[str] = deque()

    def __aiter__(self) -> "LineTap":
        return self

    async def __anext__(self) -> str:
        if self._it is None:
            self._it = self._lines.__aiter__()
        line = await self._it.__anext__()
        self.pending.append(line)
        return line


class AnsweredReadStream:
    """The transport's read stream with its unreadable lines answered and left out:
    the server reads only messages. ``line`` is the number of the last line read; ``tap``,
    the transport's input lines, lets a request with an id MCP does not take (which the
    SDK reads as a notification) be answered too."""

    def __init__(self, inner: Any, write: Any, tap: Optional[LineTap] = None) -> None:
        self._inner = inner
        self._write = write
        self._tap = tap
        self.line = 0
        #: Ids of the requests read and not yet answered (:class:`AnsweringWriteStream`
        #: takes an id out when its answer is written).
        self.open: set[Any] = set()

    async def _drain(self) -> None:
        """Wait, at most :data:`DRAIN_SECONDS`, for the requests still running to be
        answered. The SDK cancels every request still running when its read stream ends: a
        write (``hyp_add``) sent down a pipe that then closed was committed and never
        answered. Polled every 50 ms: bounded, and no hook into the SDK's tasks."""
        with anyio.move_on_after(DRAIN_SECONDS):
            while self.open:
                await anyio.sleep(0.05)

    @property
    def last_context(self) -> Any:
        """The sender context of the last item (the SDK restores it per message)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message the transport read; each unreadable line before it is answered.
        At the end of input, the requests read and not yet answered are waited for first
        (:meth:`_drain`)."""
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                await self._drain()
                raise
            self.line += 1
            message = getattr(item, "message", None)
            if isinstance(message, JSONRPCRequest):
                self.open.add(message.id)
            elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                # (a cancelled request may never be answered)
                self.open.discard((message.params or {}).get("requestId"))
            raw = self._tap.pending.popleft() if self._tap is not None and self._tap.pending \
                else None
            if isinstance(item, Exception):
                await self._answer(item)
                continue
            # Only a notification can hide a request: no request's line is parsed twice
            why = id_problem(raw) if raw is not None and isinstance(
                getattr(item, "message", None), JSONRPCNotification) else None
            if why is None:
                return item
            await self._send(INVALID_REQUEST, why, None)

    async def _answer(self, exc: Exception) -> None:
        if isinstance(exc, ValidationError) and any(
                e.get("type") == "json_invalid" and isinstance(e.get("input"), str)
                and not e["input"].strip() for e in exc.errors()):
            return  # a blank line: no message, nothing to answer
        code, why, rid = describe(exc)
        if isinstance(exc, ValidationError):
            found, value = _whole(exc.errors())
            if found and isinstance(value, dict) and "method" not in value \
                    and ("result" in value or "error" in value):
                # a response the client sent, malformed (`"id": null` with a result): JSON-RPC
                # answers no response, so it is only said on stderr
                with suppress(OSError, ValueError):
                    sys.stderr.write(f"kb mcp: input line {self.line} was not read: {why}; "
                                     "not answered (a response), still serving\n")
                    sys.stderr.flush()
                return
        await self._send(code, why, rid)

    async def _send(self, code: int, why: str, rid: Any) -> None:
        """Answer input line :attr:`line` with JSON-RPC error ``code`` (``why``: what was
        wrong) and id ``rid``, and say so on stderr."""
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


#: The longest kb mcp waits at the end of its input for requests still running to be
#: answered (a write waits for the write lock, then commits through the hooks).
DRAIN_SECONDS = 600.0


class AnsweringWriteStream:
    """The transport's write stream, telling ``reader`` (an :class:`AnsweredReadStream`)
    which requests are answered."""

    def __init__(self, inner: Any, reader: AnsweredReadStream) -> None:
        self._inner = inner
        self._reader = reader

    async def send(self, item: Any) -> None:
        """Write ``item``; an answer (a response or an error) closes its request's id."""
        await self._inner.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, (JSONRPCResponse, JSONRPCError)):
            self._reader.open.discard(message.id)

    async def aclose(self) -> None:
        """Close the transport's write stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> "AnsweringWriteStream":
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc_val: Optional[BaseException], exc_tb: Optional[TracebackType]) -> None:
        await self.aclose()


def claim_stdin() -> Optional[tuple[BinaryIO, Callable[[], None]]]:
    """Take the process's stdin for the protocol, as the SDK's transport would: the wire is
    read from a private duplicate of fd 0 and fd 0 points at the null device while serving,
    so git and the hooks read EOF, never protocol bytes. Returns the wire (binary) and the
    function that points fd 0 back at it; None where this cannot be done (no fd 0 behind
    ``sys.stdin``, Windows, a descriptor error): the SDK then claims stdin itself.

    kb reads the wire itself because the SDK decodes it with replacement characters, which
    would run a request whose bytes are not UTF-8 with U+FFFD in its arguments.
    """
    if sys.platform == "win32" or sys.stdin is None:
        return None
    try:
        if sys.stdin.buffer.fileno() != 0:
            return None
    except (AttributeError, OSError, ValueError):
        return None
    import fcntl

    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(private)
        return None

    def release() -> None:
        with suppress(OSError):
            os.dup2(private, 0)

    # closefd=False, and ``private`` is never closed: a worker thread may still be blocked
    # reading it after serving ends, and a recycled descriptor would feed it another file.
    return os.fdopen(private, "rb", closefd=False), release


def wire_text(wire: BinaryIO) -> Any:
    """The async text lines of ``wire`` for the SDK's transport: UTF-8, with each byte that
    is not UTF-8 kept as U+DC80-U+DCFF (surrogateescape), which the SDK's parser refuses and
    :func:`describe` names, instead of U+FFFD, which would pass as text."""
    return anyio.wrap_file(io.TextIOWrapper(wire, encoding="utf-8", errors="surrogateescape"))


async def serve_stdio(server: MCPServer, fallback: Any) -> None:
    """Serve ``server`` over the SDK's stdio transport, answering unreadable lines.
    ``fallback`` (the SDK's own ``run_stdio_async``) serves when this SDK's server has
    no low-level server to drive."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not hasattr(lowlevel, "run"):
        await fallback()
        return
    claimed = claim_stdin()
    try:
        tap = LineTap(wire_text(claimed[0])) if claimed is not None else None
        async with stdio_server(stdin=tap) as (read_stream, write_stream):
            reader = AnsweredReadStream(read_stream, write_stream, tap)
            await lowlevel.run(reader, AnsweringWriteStream(write_stream, reader),
                               lowlevel.create_initialization_options())
    finally:
        if claimed is not None:
            claimed[1]()
