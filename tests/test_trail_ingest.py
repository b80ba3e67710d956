"""``kb trail ingest`` (issue 15): Claude Code JSONL and the generic events format, the
deterministic classifier's choices, thresholds, de-duplication, quotas, MMR, re-ingest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke
from trail_support import kb, ok  # noqa: F401 (a fixture and a helper)
from kb.trail import classify as C

FIX = Path(__file__).resolve().parent / "trail_fixtures"




def kinds_titles(kb: Path, nid: str) -> list[tuple[str, str, str]]:
    return [(c["kind"], c["title"], c["status"]) for c in ok(kb, "node", nid)["children"]]


def test_claude_code_transcript(kb: Path) -> None:
    r = invoke("trail", "ingest", str(FIX / "claude_en.jsonl"), "--json", cwd=kb)
    assert r.code == 0, r.stderr
    res = r.json()
    assert res["added"] == 15 and res["hits"] == 0
    assert res["problems"] == [{"path": str(FIX / "claude_en.jsonl"), "line": 7,
                                "message": "not a JSON line; skipped"}]
    assert "claude_en.jsonl:7: not a JSON line" in r.stderr
    ov = ok(kb, "overview")
    assert ov["goal"]["title"] == "Why does the prompt cache miss on every second request?"
    goal = ov["goal"]["id"]
    steps = ok(kb, "node", goal)["children"]
    assert [s["title"] for s in steps] == [
        "Turn 1: Why does the prompt cache miss on every second request?",
        "Turn 2: Pin the timestamp and verify."]
    assert kinds_titles(kb, steps[0]["id"]) == [
        ("question", "Why does the cache miss only on the second request?", "open"),
        ("hypothesis", "Maybe the tool order changes between turns.", "open"),
        ("evidence", "The log shows the prefix grew by 214 bytes.", "done"),
        ("decision", "Let me pin the tool order and rerun the test.", "done"),
        ("conclusion", "Therefore the root cause is the timestamp in the system prompt.", "done"),
        ("action", "tool calls ×3 (Read, Grep, Bash)", "done"),
        ("dead_end", "Bash failed: ERROR: file or directory not found: tests/test_cache.py.", "done"),
    ]
    step1 = ok(kb, "node", steps[0]["id"])
    # The near-duplicate ("… again.") was dropped; the low-confidence and low-margin
    # thoughts were folded into the step as process notes.
    assert "Process notes ×2: I am reading the file now to look around. / Maybe I should " \
           "check the log first?" in step1["summary"]
    assert step1["created_by"] == "extractor"
    assert kinds_titles(kb, steps[1]["id"]) == [
        ("dead_end", "Pinning the order did not work, the miss remains.", "done"),
        ("evidence", "The benchmark shows a hit rate of 100% after removing the timestamp.", "done"),
        ("conclusion", "So the cause is the timestamp: it changes the prefix every minute.", "done"),
        ("action", "tool calls ×1 (Write)", "done"),  # the trail's own tool is not counted
        ("artifact", "docs/cache-notes.md", "done"),
    ]
    # One commit, only the op log.
    files = git(kb, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert len(files) == 1 and files[0].startswith(".explore-tree/ops/")


def test_generic_events_chinese(kb: Path) -> None:
    res = ok(kb, "ingest", str(FIX / "events_zh.jsonl"))
    assert res["problems"] == [] and res["report"]["format"] == "events"
    goal = ok(kb, "overview")["goal"]
    assert goal["title"] == "为什么第二次请求总是缓存未命中？"
    steps = ok(kb, "node", goal["id"])["children"]
    assert [(s["title"], s["status"]) for s in steps] == [
        ("Turn 1: 为什么第二次请求总是缓存未命中？", "done"), ("Turn 2: 继续验证。", "abandoned")]
    assert kinds_titles(kb, steps[0]["id"]) == [
        ("question", "为什么第二次请求总是缓存未命中？", "open"),
        ("hypothesis", "可能是工具面顺序在两轮之间变了。", "open"),
        ("evidence", "日志显示前缀多了 214 字节。", "done"),
        ("decision", "我先把工具顺序固定下来再复测。", "done"),
        ("action", "tool calls ×3 (read, grep)", "done"),
        ("dead_end", "grep failed: grep: src/x: 没有那个文件或目录", "done"),
    ]
    assert "Process notes ×1: 这里先整体浏览一下代码结构和目录。" in ok(kb, "node", steps[0]["id"])["summary"]
    assert kinds_titles(kb, steps[1]["id"]) == [
        ("dead_end", "固定顺序之后还是不行，排除了这个原因。", "done"),
        ("conclusion", "因此根因是系统提示里的时间戳。", "done"),
        ("action", "tool calls ×1 (write)", "abandoned"),
        ("artifact", "docs/结论.md", "done"),
        ("artifact", "reports/cache.html", "done"),
    ]
    assert ok(kb, "frontier")["avoid"][0]["title"] == "固定顺序之后还是不行，排除了这个原因。"


def commits(kb: Path) -> int:
    return int(git(kb, "rev-list", "--count", "HEAD"))


def head_ops(kb: Path) -> list[dict]:
    """The operations of the one log file the HEAD commit added."""
    files = git(kb, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert len(files) == 1 and files[0].startswith(".explore-tree/ops/")
    return [json.loads(x) for x in git(kb, "show", f"HEAD:{files[0]}").splitlines()]


def test_reingest_records_nothing_and_hits_count_once_per_session(kb: Path,
                                                                   tmp_path: Path) -> None:
    """Decision (docs/DECISIONS.md): the same transcript again adds no node, records no
    operation and makes no commit; a node's hits grow once per other session that yields
    it — one ``hit`` operation in that ingest's one commit."""
    zh = FIX / "events_zh.jsonl"
    first = ok(kb, "ingest", str(zh))
    n, count, head = ok(kb, "stats")["nodes"], commits(kb), git(kb, "rev-parse", "HEAD")
    assert first["added"] == n == 14 and first["hits"] == 0
    again = ok(kb, "ingest", str(zh))
    assert (again["added"], again["hits"], again["commit"], again["paths"], again["batch"]) == (
        0, 0, None, [], None)
    assert again["changes"][-1] == "added 0 node(s); 0 seen again (nothing new: nothing recorded)"
    assert commits(kb) == count and git(kb, "rev-parse", "HEAD") == head
    assert git(kb, "status", "--porcelain", "-uall") == ""
    st = ok(kb, "stats")
    assert st["nodes"] == n and st["duplicates"]["nodes_hit_again"] == 0
    assert {ok(kb, "node", i)["hits"] for i in first["ids"]} == {1}
    # The same session after it grew by a turn: the new turn's nodes, no hit.
    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(zh.read_bytes() + json.dumps(
        {"type": "user", "text": "再确认一次。", "session": "s-zh-1"}).encode() + b"\n")
    res = ok(kb, "ingest", str(grown))
    assert res["added"] == 1 and res["hits"] == 0 and commits(kb) == count + 1
    assert [o["op"] for o in head_ops(kb)] == ["add"]
    # Another session yielding the same thoughts and artifact: its own goal, steps and
    # actions, and one hit operation for the nodes it saw again.
    other = tmp_path / "other.jsonl"
    other.write_text(zh.read_text(encoding="utf-8").replace("s-zh-1", "s-zh-2"), encoding="utf-8")
    res = ok(kb, "ingest", str(other))
    assert commits(kb) == count + 2 and res["hits"] > 0
    hit_ops = [o for o in head_ops(kb) if o["op"] == "hit"]
    assert len(hit_ops) == 1 and hit_ops[0]["session"] == "s-zh-2"
    seen_again = hit_ops[0]["nodes"]
    assert len(seen_again) == res["hits"] and set(seen_again) <= set(first["ids"])
    assert {ok(kb, "node", i)["hits"] for i in seen_again} == {2}
    assert ok(kb, "stats")["duplicates"]["nodes_hit_again"] == res["hits"]
    # …and that session once more: nothing.
    res = ok(kb, "ingest", str(other))
    assert res["commit"] is None and res["hits"] == 0 and commits(kb) == count + 2
    assert {ok(kb, "node", i)["hits"] for i in seen_again} == {2}


def test_bad_transcripts_are_usage_errors(kb: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    r = invoke("trail", "ingest", str(empty), "--json", cwd=kb)
    assert r.code == 2 and "no transcript events" in r.json()["error"]["message"]
    r = invoke("trail", "ingest", str(tmp_path / "missing.jsonl"), "--json", cwd=kb)
    assert r.code == 2 and "missing.jsonl" in r.json()["error"]["message"]
    only = tmp_path / "only.jsonl"
    only.write_text('{"type": "reasoning", "text": "Maybe it is the cache."}\n', encoding="utf-8")
    r = invoke("trail", "ingest", str(only), "--json", cwd=kb)
    assert r.code == 2 and "no real user message" in r.json()["error"]["message"]
    # the lines kb skipped are named (path and line), not only "no real user message"
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"type": "user"}\n{"type": "weird"}\nnot json\n', encoding="utf-8")
    r = invoke("trail", "ingest", str(mixed), "--json", cwd=kb)
    msg = r.json()["error"]["message"]
    assert r.code == 2 and f"skipped {mixed}:3: not a JSON line (and 1 more)" in msg, msg
    junk = tmp_path / "junk.jsonl"
    junk.write_text("nope\n", encoding="utf-8")
    r = invoke("trail", "ingest", str(junk), "--json", cwd=kb)
    assert r.code == 2 and f"skipped {junk}:1: not a JSON line" in r.json()["error"]["message"]


# -- the classifier on its own ---------------------------------------------------------


@pytest.mark.parametrize("text,kind", [
    ("Why does the cache miss on every second request?", "question"),
    ("Maybe the tool order changes between turns.", "hypothesis"),
    ("The log shows the prefix grew by 214 bytes.", "evidence"),
    ("Let me pin the tool order and rerun the test.", "decision"),
    ("Pinning the order did not work, the miss remains.", "dead_end"),
    ("Therefore the root cause is the timestamp in the system prompt.", "conclusion"),
    ("为什么第二次请求总是缓存未命中？", "question"),
    ("可能是工具面顺序在两轮之间变了。", "hypothesis"),
    ("日志显示前缀多了 214 字节。", "evidence"),
    ("我先把工具顺序固定下来再复测。", "decision"),
    ("固定顺序之后还是不行，排除了这个原因。", "dead_end"),
    ("因此根因是系统提示里的时间戳。", "conclusion"),
    ("I am reading the file now to look around.", "note"),          # best score 0 < 1.2
    ("Maybe I should check the log first?", "note"),               # margin 0.1 < 0.35
    ("It probably fails because the lock is held.", "note"),       # margin 0.3 < 0.35
])
def test_classifier_choices(text: str, kind: str) -> None:
    assert C.classify(text)[0] == kind


def test_thresholds_are_the_issue_numbers() -> None:
    assert (C.MIN_CONFIDENCE, C.MIN_MARGIN, C.DEDUPE_JACCARD, C.MMR_LAMBDA, C.MAX_PER_TURN) == \
        (1.2, 0.35, 0.85, 0.7, 10)
    assert C.QUOTAS == {"question": 2, "hypothesis": 3, "decision": 3, "evidence": 3,
                        "conclusion": 1, "dead_end": 3}
    # A margin of exactly 0.35 passes; just below folds.
    sc = C.scores("Maybe I should check the log first?")
    assert sorted(sc.values())[-1] - sorted(sc.values())[-2] < 0.35


def test_tokens_and_jaccard() -> None:
    assert C.tokens("Cache 命中率") == frozenset({"cache", "命中", "中率"})
    a = C.tokens("The log shows the prefix grew by 214 bytes.")
    b = C.tokens("The log shows the prefix grew by 214 bytes again.")
    assert C.jaccard(a, b) == 8 / 9 >= 0.85


def test_quotas_total_and_conclusion_slot() -> None:
    qs = [f"Why does component {w} fail on start?" for w in
          ("alpha", "bravo", "charlie", "delta", "echo")]
    hs = [f"Maybe the {w} module leaks memory slowly." for w in
          ("kilo", "lima", "mike", "november", "oscar")]
    es = [f"The log shows {n} ms spent in {w}." for n, w in
          ((10, "parse"), (20, "load"), (30, "write"), (40, "sync"), (50, "index"))]
    ds = [f"Let me rewrite the {w} stage first." for w in
          ("tokenizer", "reader", "writer", "planner", "cacher")]
    concl = "Therefore the root cause is the allocator."
    text = " ".join(qs + hs + es + ds + [concl])
    chosen, notes = C.select(C.split_thoughts(text))
    got = [t.kind for t in chosen]
    assert len(chosen) == 10
    assert got.count("question") == 2 and got.count("conclusion") == 1
    assert all(got.count(k) <= q for k, q in C.QUOTAS.items())
    assert [t.pos for t in chosen] == sorted(t.pos for t in chosen)  # transcript order
    assert len(notes) == 21 - 10


def test_mmr_prefers_a_different_thought_over_a_similar_one() -> None:
    text = ("Maybe the cache key includes the tool order list. "
            "Maybe the cache key includes the tool order map. "
            "Maybe the timestamp in the system prompt changes. "
            "Maybe the region header differs per request.")
    chosen, _ = C.select(C.split_thoughts(text))
    titles = [t.text for t in chosen]
    # Quota 3 hypotheses: the second near-copy loses to the two different ones.
    assert titles == ["Maybe the cache key includes the tool order list.",
                      "Maybe the timestamp in the system prompt changes.",
                      "Maybe the region header differs per request."]


def test_ingest_no_commit_and_two_branches_converge(kb: Path) -> None:
    head = git(kb, "rev-parse", "HEAD")
    res = ok(kb, "ingest", str(FIX / "events_zh.jsonl"), "--no-commit")
    assert res["commit"] is None and git(kb, "rev-parse", "HEAD") == head
    assert git(kb, "status", "--porcelain", "-uall") == f"?? {res['paths'][0]}"
    git(kb, "add", "-A")
    git(kb, "commit", "-q", "-m", "ingest by hand")
    # The same transcript ingested on another branch gives the same node ids (fingerprints);
    git(kb, "checkout", "-q", "-b", "other", head)
    other = ok(kb, "ingest", str(FIX / "events_zh.jsonl"))
    assert other["ids"] == res["ids"]
    git(kb, "merge", "-q", "--no-edit", "main")
    # after the merge every node exists once; the same session counts no hit.
    st = ok(kb, "stats")
    assert st["nodes"] == res["added"] and st["duplicates"]["nodes_hit_again"] == 0


def test_a_transcript_without_reasoning_uses_the_assistants_narration(kb: Path) -> None:
    ok(kb, "ingest", str(FIX / "claude_no_thinking.jsonl"))
    goal = ok(kb, "overview")["goal"]
    assert goal["title"] == "Make the nightly build green again."
    (step,) = ok(kb, "node", goal["id"])["children"]
    assert kinds_titles(kb, step["id"]) == [
        ("decision", "I'll look at the failing job first.", "done"),
        ("evidence", "The log shows test_read times out after 30 s.", "done"),
        ("hypothesis", "Maybe the fixture server never starts on the runner.", "open"),
        ("conclusion", "The root cause is the port the fixture hard-codes, so the fix is to "
                       "bind port 0.", "done"),
        ("action", "tool calls ×1 (Bash)", "done"),
    ]
