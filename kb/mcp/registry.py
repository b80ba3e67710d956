"""How an area registers its MCP tools: one line per tool.

A tool is a plain function whose first parameter is the :class:`KnowledgeBase`
the server serves (or, annotated :class:`kb.mcp.warm.WarmKB`, the server's warm
KB whose ``index()`` is kept open between calls) and whose other parameters are the CLI's arguments and options
in snake_case (with full type hints: the SDK builds the input schema from them)::

    def register(reg: Registry) -> None:
        reg.read("explore_tree", explore_tree, "The exploration tree of a problem …")
        reg.write("explore_tree_record", record_node, "Record a node …", idempotent=False)

The registry drops the KB parameter from the advertised signature, makes every
boolean and number parameter strict (:func:`strict`: no ``"yes"`` for true, no
``true`` for 1, no ``"0.9"`` for 0.9), calls the
function with the served KB, and turns what it returns (an ``OpResult``, an
object with ``to_json``/``as_dict``, a pydantic model, plain JSON data) into
the tool result: the CLI's ``--json`` text, plus ``structuredContent`` when it is
an object. A :class:`kb.errors.KbError` becomes a tool error (``isError``) whose
text is the CLI's error object ``{"error": {"message", "exit_code", "kind"}}``;
any other exception is a tool error of kind ``internal``. The server never dies
of a tool. Descriptions are static text: the tool list never depends on the KB.

:class:`KbServer` answers what the SDK refuses before a tool runs with the same
error object, of kind ``usage``: an unknown tool, an unknown argument, a missing
or ill-typed one (the SDK's own answer is pydantic's text, without a kind). It
answers an unknown prompt with the protocol's invalid-params error, never a traceback,
a request sent before ``initialize`` with an error saying so (:func:`not_initialized`), and
an input line that is no JSON-RPC message with JSON-RPC's parse error or invalid request
(:mod:`kb.mcp.stdio`).
"""

import functools
import inspect
import json
import logging
import threading
import types
import typing
from typing import Annotated, Any, Callable, Literal, Union

from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Strict, ValidationError

from kb import git
from kb.errors import InternalError, UsageError, error_object
from kb.mcp.stdio import serve_stdio
from kb.mcp.warm import WarmKB

log = logging.getLogger("kb.mcp")


def to_data(value: Any) -> Any:
    """The JSON data of a tool's return value (what the CLI prints with ``--json``)."""
    if hasattr(value, "to_json") and callable(value.to_json) and not isinstance(value, (str, bytes)):
        out = value.to_json()
        return json.loads(out) if isinstance(out, str) else out
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return value.as_dict()
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return value.model_dump(mode="json")
    return value


def _result(data: Any, is_error: bool = False) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, indent=1, default=str)
    structured = json.loads(text) if isinstance(data, dict) else None
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured, is_error=is_error)


#: A number a tool writes into a card as text (a probability, a value, a priority, a
#: threshold): a JSON number, or the text itself (``"0.80"``, ``"never"``) kept as written.
NumberText = Union[str, float]


def number_text(value: "str | float") -> str:
    """The card text of a :data:`NumberText` argument: a string as it is, a JSON number as
    its shortest decimal (``0.8``, ``5`` for 5 or 5.0; up to 15 significant digits).
    Clients that generate arguments send numbers; kb parses the text as the CLI does."""
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else format(value, ".15g")


def strict(annotation: Any) -> Any:
    """``annotation`` with every ``bool``, ``int`` and ``float`` in it (in lists, dict values,
    optionals) validated strictly: a boolean is a JSON boolean and a number a JSON number.

    pydantic's lax mode reads ``true`` as 1, ``"0.9"`` as 0.9 and ``"no"`` as False, so a
    verdict's ``{"v1": true}`` would settle a target and ``no_commit: "no"`` commit; the CLI
    refuses the same values as usage errors. Only these three change meaning when coerced
    (a string argument is never made from a number, even in lax mode), and ``Strict()``
    leaves the JSON Schema the SDK publishes as it was. An integer stays a valid float.
    """
    if annotation in (bool, int, float):
        return Annotated[annotation, Strict()]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None or origin is Literal or not args:
        return annotation
    if origin is Annotated:  # keep its metadata (an alias), make what it annotates strict
        return Annotated[(strict(args[0]), *annotation.__metadata__)]
    inner = tuple(strict(a) for a in args)
    if origin in (Union, types.UnionType):
        return Union[inner]
    return origin[inner]


def _usage_text(tool: str, exc: ValidationError) -> str:
    """One line per rejected argument: its name and what was wrong (never its value)."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        if err.get("type") == "missing":
            parts.append(f"missing required argument {where!r}")
        else:
            got = type(err.get("input")).__name__
            got = {"NoneType": "null", "str": "string", "int": "integer", "float": "number",
                   "bool": "boolean", "list": "array", "dict": "object"}.get(got, got)
            parts.append(f"argument {where!r}: {err.get('msg', 'invalid')} (got {got})")
    return f"{tool}: " + "; ".join(parts)


#: The SDK's answer to a request sent before ``initialize`` (code and message; its data is
#: empty): the same as for malformed params, so it does not say what the client must do.
_NOT_INITIALIZED = (INVALID_PARAMS, "Invalid request parameters")


async def not_initialized(ctx: ServerRequestContext[Any, Any],
                          call_next: CallNext) -> HandlerResult:
    """Server middleware: the SDK's refusal of a request before ``initialize`` says so.

    Only the SDK's initialization gate raises this :class:`MCPError` (malformed params reach
    middleware as a ``ValidationError``), and only while the client sent no ``initialize``
    (``client_params`` is None). The code stays -32602, which clients may key on."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        if (exc.error.code, exc.error.message) != _NOT_INITIALIZED \
                or ctx.session.client_params is not None:
            raise
        raise MCPError(code=INVALID_PARAMS,
                       message="The session is not initialized: send initialize first "
                               f"({ctx.method} was not run)",
                       data={"method": ctx.method}) from None


class KbServer(MCPServer):
    """An :class:`MCPServer` whose every tool call ends in a result: kb's error object
    (kind ``usage``) for a call the SDK rejects before the tool runs, kind ``internal``
    for anything unexpected around it. ``registry`` is set by :func:`kb.mcp.build_server`."""

    registry: "Registry | None" = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # innermost, after the SDK's own (its public, provisional middleware list)
        self.middleware.append(not_initialized)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        """Run tool ``name`` with ``arguments``; always a result, never an exception.

        An unknown tool or argument, or arguments the SDK rejects, give kb's error object with
        kind
        ``usage``; a kb error raised by the tool gives its own object; anything else kind
        ``internal``.
        """
        known = self.registry.params.get(name) if self.registry is not None else None
        if known is None:
            return _result(error_object(UsageError(
                f"no tool named {name!r} (tools/list gives the tools)")), is_error=True)
        unknown = sorted(set(arguments) - known)
        if unknown:
            return _result(error_object(UsageError(
                f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))} (it takes: {', '.join(sorted(known)) or 'none'})")),
                is_error=True)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return _result(error_object(UsageError(_usage_text(name, cause))), is_error=True)
            log.error("tool %s failed outside kb: %r", name, exc, exc_info=cause or exc)
            return _result(error_object(InternalError(f"{name}: {exc}")), is_error=True)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Any = None) -> Any:
        """Render prompt ``name``. An unknown name is the protocol's invalid-params error.

        The SDK raises a plain ValueError there, which its dispatcher logs with a full
        traceback on stderr for what is only a client's typo; an :class:`MCPError` is
        answered as it is, without a log line.
        """
        prompts = {p.name: p for p in await self.list_prompts()}
        if name not in prompts:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}")
        # An argument the prompt does not take: the SDK's "Error rendering prompt" (code 0,
        # a traceback on stderr) named neither the argument nor what the prompt takes.
        takes = [a.name for a in prompts[name].arguments or []]
        unknown = sorted(set(arguments or {}) - set(takes))
        if unknown:
            raise MCPError(code=INVALID_PARAMS, message=(
                f"prompt {name} takes no argument {', '.join(map(repr, unknown))}; it takes "
                + (", ".join(map(repr, takes)) if takes else "none")))
        return await super().get_prompt(name, arguments, context)

    async def run_stdio_async(self) -> None:
        """Serve over stdio; a line that is no JSON-RPC message gets JSON-RPC's parse error
        or invalid-request answer and a line on stderr (the SDK drops it unanswered)."""
        await serve_stdio(self, super().run_stdio_async)


class Registry:
    """Collects kb tools for one KB, then installs them on its :class:`MCPServer`.

    The tools are collected first (:meth:`read`, :meth:`write`) and added by
    :meth:`install`, so that the server's instructions can name which tools return the
    write result and which take ``expect`` (:meth:`instructions`): the SDK takes the
    instructions only when the server is made.
    """

    def __init__(self, warm: WarmKB) -> None:
        self.warm = warm
        self.names: list[str] = []
        #: tool name -> the argument names it takes (as the client sends them: aliases)
        self.params: dict[str, frozenset[str]] = {}
        #: the write tools, in registration order
        self.writes: list[str] = []
        #: the write tools that return the write result (an ``OpResult``: op, id, ids, …)
        self.op_results: list[str] = []
        # One call at a time: the SDK may run tools in parallel threads, and kb's
        # writes (and an agent's read-after-write) expect the order of the calls.
        self.lock = threading.Lock()
        self._tools: list[dict[str, Any]] = []  # MCPServer.add_tool's arguments, in order

    def install(self, server: MCPServer) -> None:
        """Add every collected tool to ``server``, in registration order."""
        for tool in self._tools:
            server.add_tool(**tool)

    def instructions(self, lead: str, tail: str) -> str:
        """The server's instructions: ``lead``, then which write tools return the write
        result, what the others return and which tools take ``expect``, then ``tail``."""
        own = [n for n in self.writes if n not in self.op_results]
        guarded = [n for n in self.names if "expect" in self.params[n]]
        return (
            f"{lead} These write tools are one transaction each, with at most one commit (none "
            "with no_commit, dry_run or check, or when nothing changed), and return {op, id, "
            "ids, paths, blobs, commit, changes, recovered}: "
            f"{', '.join(self.op_results)}. The other write tools ({', '.join(own)}) return "
            "what their CLI command prints with --json; the schema tool gives its JSON Schema "
            "(command: the tool's name with spaces, e.g. 'lock claim'; explore_tree_record: "
            "'trail <action>'). Pass a file's blob (from a read's `blob` or a write's `blobs`) "
            "as `expect` to refuse a write when the file changed (kind stale); the tools taking "
            f"it: {', '.join(guarded)}. A tool that only creates a card or rewrites many files "
            f"takes none, as the CLI refuses --expect there. {tail}")

    def _add(self, name: str, fn: Callable[..., Any], description: str,
             annotations: ToolAnnotations, takes_kb: bool = True) -> None:
        sig = inspect.signature(fn)
        # real types (also from string annotations), Annotated[…, Field(alias=…)] kept
        hints = typing.get_type_hints(fn, include_extras=True)
        first = list(sig.parameters)[0] if sig.parameters else ""
        served: Callable[[], Any] | None = None
        if takes_kb:
            served = (lambda: self.warm) if hints.get(first) is WarmKB else self.warm.get
        params = [p.replace(annotation=strict(hints.get(p.name, p.annotation)))
                  for p in list(sig.parameters.values())[1 if takes_kb else 0:]]
        # The SDK calls with a parameter's alias (``from`` for ``from_``): map it back.
        aliases = {m.alias: p.name for p in params for m in getattr(p.annotation, "__metadata__", ())
                   if getattr(m, "alias", None)}

        @functools.wraps(fn)
        def tool(**kwargs: Any) -> CallToolResult:
            try:
                with self.lock, git.config_scope():  # git config read once per call
                    args = (served(),) if served is not None else ()
                    kwargs = {aliases.get(k, k): v for k, v in kwargs.items()}
                    return _result(to_data(fn(*args, **kwargs)))
            except Exception as exc:  # every failure is a tool error, never a dead server
                if not hasattr(exc, "kind"):
                    log.exception("tool %s failed", name)
                return _result(error_object(exc), is_error=True)

        tool.__signature__ = sig.replace(parameters=params,  # type: ignore[attr-defined]
                                         return_annotation=CallToolResult)
        tool.__annotations__ = {p.name: p.annotation for p in params}
        tool.__annotations__["return"] = CallToolResult
        del tool.__wrapped__  # the SDK must see the signature above, not fn's
        self._tools.append({"fn": tool, "name": name, "description": description,
                            "annotations": annotations, "structured_output": False})
        self.names.append(name)
        sent = {v: k for k, v in aliases.items()}
        self.params[name] = frozenset(sent.get(p.name, p.name) for p in params)

    def read(self, name: str, fn: Callable[..., Any], description: str, *,
             open_world: bool = False, takes_kb: bool = True) -> None:
        """A tool that changes nothing (``readOnlyHint``; repeating it is harmless).
        ``open_world``: it asks a service outside the KB (e.g. a literature API);
        ``takes_kb=False``: ``fn`` has no KB parameter (it finds its own data)."""
        self._add(name, fn, description, ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True,
            open_world_hint=open_world), takes_kb)

    def write(self, name: str, fn: Callable[..., Any], description: str, *,
              destructive: bool = False, idempotent: bool = False,
              open_world: bool = False, takes_kb: bool = True, op_result: bool = True) -> None:
        """A tool that writes. ``destructive``: it can overwrite or remove what is there (not
        only add); ``idempotent``: the same call twice leaves the same state; ``open_world``:
        it talks to a remote; ``op_result``: it is one transaction and one commit returning
        the write result (``OpResult``); False for a write with an object of its own (a lock
        claim, a gen run's step), as its CLI command prints it."""
        self._add(name, fn, description, ToolAnnotations(
            read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent,
            open_world_hint=open_world), takes_kb)
        self.writes.append(name)
        if op_result:
            self.op_results.append(name)


__all__ = ["KbServer", "Registry", "not_initialized", "to_data"]
