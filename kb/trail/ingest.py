"""``kb trail ingest``: an agent session transcript -> trail nodes, deterministically (issue 15).

Two input formats, detected per file:

* **Claude Code JSONL** — one object per line with ``type`` ``user`` /
  ``assistant`` (others ignored) and ``message.content`` a string or a list
  of blocks ``text`` / ``thinking`` / ``tool_use`` / ``tool_result``;
  ``sessionId`` names the session.
* **Generic events** — one object per line with ``type``:

  ====================  ==========================================================
  ``user``              a real user message ``text`` (starts a turn)
  ``injected``          a message the harness injected ``text`` (ignored)
  ``reasoning``         the model's reasoning ``text``
  ``assistant``         the model's answer ``text``
  ``tool_call``         ``id``, ``name``, ``input`` (object)
  ``tool_result``       ``id``, ``ok`` (bool), ``error`` (text, when not ok)
  ``artifact``          a deliverable ``path`` (and ``description``)
  ``turn_end``          optional; ``interrupted: true`` marks the turn abandoned
  ====================  ==========================================================

  plus an optional ``session`` on any event.

What becomes what (seed §4): the first real user message is the ``goal``
(first sentence as title); each turn a ``step`` under it ("Turn N: intent");
the turn's reasoning is cut into sentences and classified
(:mod:`kb.trail.classify`; a turn without reasoning blocks uses the assistant's
texts before its final answer) — the chosen thoughts (≤ 10) hang under the step,
the rest is folded into the step's summary as "process notes ×N"; one
aggregated ``action`` per turn ("tool calls ×N (read, grep…)"); a
``dead_end`` for each failed tool call; an ``artifact`` for each file a
write-type tool wrote (or each ``artifact`` event); a conclusion sentence of
the final answer becomes a ``conclusion`` when the reasoning gave none. Calls
to the trail's own tools are ignored. Every node has a fingerprint; a node
whose fingerprint is already in the graph is not added again; its ``hits``
grows once per other transcript session that yields it — so ingesting the same
transcript twice records nothing at all (no commit). No model is called.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb import json_input
from kb.errors import UsageError
from kb.trail.classify import Thought, select, split_thoughts
from kb.trail.model import LogProblem, MAX_SUMMARY, MAX_TITLE, clip

WRITE_TOOLS = {"write", "edit", "multiedit", "notebookedit", "create_file", "write_file",
               "str_replace_based_edit_tool", "apply_patch"}
OWN_TOOLS = ("explore_tree", "explore_tree_record")
MAX_REASONING_CHARS = 600
_FIRST_SENTENCE = re.compile(r"^(.+?(?:[。！？!?]|\.(?=\s)|$))", re.S)
_INJECTED = re.compile(r"^\s*<(command-|local-command|system-reminder|user-prompt-submit-hook)")


@dataclass
class ToolCall:
    """One tool call of a turn: name, input, and whether it failed (with the error)."""

    id: str
    name: str
    input: dict[str, Any]
    failed: bool = False
    error: str = ""


@dataclass
class Turn:
    """One turn: the user's text, reasoning blocks, answer texts, tool calls, artifacts."""

    index: int
    user: str
    reasoning: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    artifacts: list[tuple[str, str]] = field(default_factory=list)
    interrupted: bool = False


@dataclass
class Transcript:
    """A parsed transcript: its session id, format, turns and skipped lines."""

    session: str
    format: str
    turns: list[Turn]
    problems: list[LogProblem]


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (whitespace collapsed; ends at 。！？!? or a period
    before a space), clipped to ``MAX_TITLE`` (120) characters: a node title.
    """
    t = " ".join(text.split())
    m = _FIRST_SENTENCE.match(t)
    return clip(m.group(1) if m else t, MAX_TITLE)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _own_tool(name: str) -> bool:
    return any(name == t or name.endswith("__" + t) for t in OWN_TOOLS)


def _skipped(problems: list[LogProblem]) -> str:
    """What a refusal adds about the lines kb skipped: how many, and the first by path and
    line (`not json` three lines down was never named)."""
    if not problems:
        return ""
    p = problems[0]
    more = f" (and {len(problems) - 1:,} more)" if len(problems) > 1 else ""
    return f"; skipped {p.path}:{p.line}: {p.message.removesuffix('; skipped')}{more}"


def parse(path: Path) -> Transcript:
    """Read a transcript file (either format). Bad lines become problems (path, line)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the transcript: {exc.strerror or exc}") from None
    problems: list[LogProblem] = []
    events: list[tuple[int, dict[str, Any]]] = []
    for i, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            ev = json_input.loads(line)
        except (ValueError, UnicodeDecodeError):
            problems.append(LogProblem(str(path), i, "not a JSON line; skipped"))
            continue
        if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
            problems.append(LogProblem(str(path), i, "not an event (needs a type); skipped"))
            continue
        events.append((i, ev))
    if not events:
        raise UsageError(f"{path}: no transcript events (expected Claude Code JSONL or the "
                         "generic events format of `kb trail ingest --help`)" + _skipped(problems))
    claude = any("message" in ev for _, ev in events)
    tr = _claude(events) if claude else _generic(events, problems, str(path))
    tr.problems = problems + tr.problems
    if not tr.session:
        tr.session = hashlib.sha1(raw[:4096]).hexdigest()[:12]
    return tr


def _new_turn(turns: list[Turn], text: str) -> Turn:
    t = Turn(index=len(turns) + 1, user=text)
    turns.append(t)
    return t


def _claude(events: list[tuple[int, dict[str, Any]]]) -> Transcript:
    turns: list[Turn] = []
    session = ""
    calls: dict[str, ToolCall] = {}
    cur: Turn | None = None
    for _, ev in events:
        session = session or str(ev.get("sessionId") or "")
        msg = ev.get("message")
        if not isinstance(msg, dict) or ev.get("isSidechain"):
            continue
        blocks = _blocks(msg.get("content"))
        if ev["type"] == "user":
            texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
            for b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") in calls:
                    c = calls[b["tool_use_id"]]
                    if b.get("is_error"):
                        c.failed = True
                        c.error = _text_of(b.get("content"))
            text = "\n".join(t for t in texts if isinstance(t, str)).strip()
            if not text or ev.get("isMeta") or _INJECTED.match(text):
                continue
            if text.startswith("[Request interrupted"):
                if cur is not None:
                    cur.interrupted = True
                continue
            cur = _new_turn(turns, text)
        elif ev["type"] == "assistant":
            if cur is None:
                cur = _new_turn(turns, "")
            for b in blocks:
                kind = b.get("type")
                if kind == "thinking" and isinstance(b.get("thinking"), str):
                    cur.reasoning.append(b["thinking"])
                elif kind == "text" and isinstance(b.get("text"), str):
                    cur.answers.append(b["text"])
                elif kind == "tool_use" and isinstance(b.get("name"), str):
                    if _own_tool(b["name"]):
                        continue
                    c = ToolCall(id=str(b.get("id") or len(calls)), name=b["name"],
                                 input=_obj(b.get("input")))
                    calls[c.id] = c
                    cur.calls.append(c)
    return Transcript(session=session, format="claude-code", turns=turns, problems=[])


def _generic(events: list[tuple[int, dict[str, Any]]], problems: list[LogProblem],
             where: str) -> Transcript:
    turns: list[Turn] = []
    session = ""
    calls: dict[str, ToolCall] = {}
    cur: Turn | None = None
    for line, ev in events:
        session = session or str(ev.get("session") or "")
        kind = ev["type"]
        text = _str(ev.get("text"))
        if kind == "user":
            if text.strip():
                cur = _new_turn(turns, text.strip())
            continue
        if kind == "injected":
            continue
        if cur is None:
            cur = _new_turn(turns, "")
        if kind == "reasoning":
            cur.reasoning.append(text)
        elif kind == "assistant":
            cur.answers.append(text)
        elif kind == "tool_call":
            name = ev.get("name")
            if not isinstance(name, str) or not name:
                problems.append(LogProblem(where, line, "tool_call without a name; skipped"))
                continue
            if _own_tool(name):
                continue
            c = ToolCall(id=str(ev.get("id") or f"call{line}"), name=name,
                         input=_obj(ev.get("input")))
            calls[c.id] = c
            cur.calls.append(c)
        elif kind == "tool_result":
            done = calls.get(str(ev.get("id")))
            if done is not None and ev.get("ok") is False:
                done.failed = True
                done.error = str(ev.get("error") or ev.get("output") or "")
        elif kind == "artifact":
            if isinstance(ev.get("path"), str) and ev["path"]:
                cur.artifacts.append((ev["path"], str(ev.get("description") or "")))
        elif kind == "turn_end":
            cur.interrupted = cur.interrupted or bool(ev.get("interrupted"))
        else:
            problems.append(LogProblem(where, line, f"unknown event type {kind!r}; skipped"))
    return Transcript(session=session, format="events", turns=turns, problems=[])


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in _blocks(content) if isinstance(b.get("text"), str))


def fingerprint(*parts: str) -> str:
    """A stable fingerprint of a node's identity (sha1 hex, 20 digits)."""
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:20]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _written_paths(c: ToolCall) -> list[str]:
    if c.failed or c.name.lower() not in WRITE_TOOLS:
        return []
    for key in ("file_path", "path", "notebook_path", "filename"):
        v = c.input.get(key)
        if isinstance(v, str) and v.strip():
            return [v.strip()]
    return []


@dataclass
class Planned:
    """One node the ingest would add: its fingerprint and its ``add`` payload."""

    fp: str
    spec: dict[str, Any]


def plan(tr: Transcript) -> tuple[list[Planned], dict[str, Any]]:
    """The nodes a transcript yields, parents before children, and a report of the choices
    (``turns``: per turn the chosen thoughts with kind and score, and the folded count)."""
    out: list[Planned] = []
    report: dict[str, Any] = {"session": tr.session, "format": tr.format, "turns": []}
    real = [t for t in tr.turns if t.user]
    if not real:
        raise UsageError("the transcript has no real user message to make the goal of"
                         + _skipped(tr.problems))
    goal_fp = fingerprint("goal", tr.session, _norm(real[0].user))
    out.append(Planned(goal_fp, {"kind": "goal", "title": first_sentence(real[0].user),
                                 "summary": clip(real[0].user, MAX_SUMMARY), "parent": goal_fp,
                                 "status": "active"}))
    for t in tr.turns:
        step_fp = fingerprint("step", tr.session, str(t.index))
        thoughts: list[Thought] = []
        # Without reasoning blocks (many transcripts have none), the assistant's texts
        # before its final answer narrate the work: they are cut and classified instead.
        source = t.reasoning or t.answers[:-1]
        for b, block in enumerate(source):
            thoughts.extend(split_thoughts(block, start=b * 1_000_000))
        chosen, notes = select(thoughts)
        if not any(c.kind == "conclusion" for c in chosen) and t.answers:
            concl = [c for c in split_thoughts(t.answers[-1]) if c.kind == "conclusion"]
            if concl:
                chosen.append(concl[-1])
        summary = []
        if source:
            summary.append("Reasoning: " + clip(" ".join(source), MAX_REASONING_CHARS))
        if notes:
            summary.append(f"Process notes ×{len(notes)}: "
                           + " / ".join(clip(n.text, 80) for n in notes[:5]))
        intent = first_sentence(t.user) if t.user else "(before the first message)"
        out.append(Planned(step_fp, {"kind": "step", "title": clip(f"Turn {t.index}: {intent}",
                                                                  MAX_TITLE),
                                     "summary": clip("\n".join(summary), MAX_SUMMARY),
                                     "parent": goal_fp,
                                     "status": "abandoned" if t.interrupted else "done"}))
        for c in chosen:
            fp = fingerprint("thought", c.kind, _norm(c.text))
            out.append(Planned(fp, {"kind": c.kind, "title": clip(c.text, MAX_TITLE),
                                    "summary": c.text if len(c.text) > MAX_TITLE else "",
                                    "parent": step_fp, "status": "open"
                                    if c.kind in ("question", "hypothesis") else "done"}))
        if t.calls:
            counts: dict[str, int] = {}
            for call in t.calls:
                counts[call.name] = counts.get(call.name, 0) + 1
            names = list(counts)
            title = f"tool calls ×{len(t.calls)} ({', '.join(names[:3])}{'…' if len(names) > 3 else ''})"
            out.append(Planned(fingerprint("action", step_fp), {
                "kind": "action", "title": title, "parent": step_fp,
                "summary": ", ".join(f"{n} ×{k}" for n, k in counts.items()),
                "status": "abandoned" if t.interrupted else "done"}))
        for call in t.calls:
            if call.failed:
                err = first_sentence(call.error) if call.error.strip() else "failed"
                out.append(Planned(fingerprint("failed", step_fp, call.id), {
                    "kind": "dead_end", "title": clip(f"{call.name} failed: {err}", MAX_TITLE),
                    "summary": clip(call.error, MAX_SUMMARY), "parent": step_fp,
                    "status": "done"}))
        files = [(p, "") for call in t.calls for p in _written_paths(call)] + t.artifacts
        for p, desc in files:
            out.append(Planned(fingerprint("artifact", p), {
                "kind": "artifact", "title": clip(p, MAX_TITLE), "summary": desc, "refs": [p],
                "parent": step_fp, "status": "done"}))
        report["turns"].append({"turn": t.index, "chosen": [
            {"kind": c.kind, "score": c.score, "text": c.text} for c in chosen],
            "folded": len(notes), "tool_calls": len(t.calls),
            "failed": sum(1 for c in t.calls if c.failed)})
    return out, report


def ingest(kb: Any, transcript: str | Path, *, no_commit: bool = False, on_wait: Any = None,
           actor: str = "extractor") -> Any:
    """Ingest a transcript as one recording; returns kb's write result
    (:class:`kb.ops.result.OpResult`, ``op`` ``trail.ingest``) whose details are
    ``batch``, ``added``, ``hits``, ``problems`` (skipped transcript lines, with path and
    line) and ``report`` (per turn: the chosen thoughts with kind and score, the folded
    count); ``changes`` has a line per turn and the totals.

    ``added`` counts new nodes, ``hits`` the existing nodes this transcript's session
    sees for the first time (their ``hits`` grows by one: one ``hit`` operation in the
    same recording). A node counts one hit per session, so ingesting the same
    transcript again — or the same session after it grew — never bumps the nodes it
    already yielded; when nothing is new, nothing is recorded (no file, no commit).
    Raises UsageError for an unreadable file or one without a user message.
    """
    from kb.ops.result import OpResult
    from kb.trail.ops import Ctx, record

    tr = parse(Path(transcript))
    planned, report = plan(tr)
    session = tr.session
    result: dict[str, Any] = {"added": 0, "hits": 0}

    def build(ctx: Ctx) -> None:
        ids: dict[str, str] = {}
        hits: list[str] = []
        added = 0
        for p in planned:
            have = ctx.g.fps.get(p.fp)
            if have is not None or p.fp in ids:
                nid = have or ids[p.fp]
                ids[p.fp] = nid
                n = ctx.g.resolve(nid) if have is not None else None
                if (n is not None and n.id not in hits
                        and f"{n.id} {session}" not in ctx.g.sightings):
                    hits.append(n.id)
                continue
            nid = "n" + p.fp[:10]
            if nid in ctx.g.nodes or nid in ctx.taken:
                nid = ctx.new_id()
            ctx.taken.add(nid)
            ids[p.fp] = nid
            spec = dict(p.spec, id=nid, fp=p.fp, source="extractor")
            spec.setdefault("tags", [])
            spec.setdefault("refs", [])
            parent = str(spec.get("parent") or "")
            spec["parent"] = None if parent == p.fp else ids.get(parent, parent)
            ctx.emit({"op": "add", "node": spec, "session": session}, nid)
            added += 1
        if hits:
            ctx.emit({"op": "hit", "nodes": hits, "session": session})
        ctx.summary = f"{added} node(s) from {Path(transcript).name}"
        result.update(added=added, hits=len(hits))

    res = record(kb, "ingest", build, as_actor=actor, no_commit=no_commit, on_wait=on_wait)
    changes = []
    for t in report["turns"]:
        kinds = ", ".join(c["kind"] for c in t["chosen"]) or "no thoughts"
        changes.append(f"turn {t['turn']}: {kinds}; {t['folded']} folded; {t['tool_calls']} "
                       f"tool call(s), {t['failed']} failed")
    changes.append(f"added {result['added']} node(s); {result['hits']} seen again"
                   + ("" if res.batch else " (nothing new: nothing recorded)"))
    # ``nodes`` (up to hundreds) are left out: `kb trail node` shows them.
    return OpResult(op=res.op, id=res.ids[0] if res.ids else None, ids=list(res.ids),
                    paths=list(res.paths), blobs=dict(res.blobs), commit=res.commit,
                    changes=changes, recovered=list(res.recovered),
                    details={"batch": res.batch, "added": result["added"],
                             "hits": result["hits"],
                             "problems": [p.to_json() for p in tr.problems], "report": report})
