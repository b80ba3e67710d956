"""The rule catalogue: every diagnostic code kb emits, as data (DESIGN.md §4).

``kb rules`` prints this table. Codes are stable: a code is never reused for
another meaning. Families:

- ``snapshot`` — a property of one snapshot (one commit, the staged index or
  the working tree). The KB0xx/KB1xx codes are reported while *parsing*
  (``kb index``); KB2xx are ``kb verify``'s snapshot rules.
- ``history`` — KB3xx compare a base snapshot with a new one (a commit with
  its first parent, the staged index with HEAD).

Severity is the default; ``kb.toml`` changes it per code (``[rules.severity]
KB240 = "error"``, ``"off"`` disables) or disables codes (``[rules] disable``).
This module is plain data and imports nothing heavy: ``kb rules`` stays fast.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, Optional

Family = Literal["snapshot", "history"]
Stage = Literal["config", "parse", "verify"]


@dataclass(frozen=True)
class RuleInfo:
    """One catalogue row: code, default severity, family, what it means, what fixes it.

    ``autofix`` is True when the diagnostic carries a mechanical fix that
    ``kb verify --fix`` applies.
    """

    code: str
    severity: str
    family: Family
    stage: Stage
    summary: str
    fix: str
    autofix: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (``kb rules --json``'s entry for one code)."""
        return asdict(self)


def _r(code: str, severity: str, family: Family, stage: Stage, summary: str, fix: str,
       autofix: bool = False) -> RuleInfo:
    return RuleInfo(code, severity, family, stage, summary, fix, autofix)


CATALOGUE: tuple[RuleInfo, ...] = (
    # -- configuration ------------------------------------------------------------
    _r("KB001", "warning", "snapshot", "config", "unknown key in kb.toml, or a value kb does not "
       "read (a rule code it does not have, a registry kind other than record): ignored",
       "remove the key or value or correct its spelling (`kb rules` lists the codes)"),
    _r("KB002", "error", "snapshot", "config", "a file path of kb.toml (tree, dashboard) is a directory",
       "move the directory away, or point [paths] at a file"),
    _r("KB003", "error", "snapshot", "config", "in a repository of several KBs, a KB's kb.toml "
       "cannot be read (TOML syntax, a value of the wrong type): that KB is not checked; it blocks "
       "when the change touches that KB", "correct that kb.toml (`kb verify` in its folder says what "
       "is wrong)"),
    _r("KB004", "warning", "snapshot", "config", "kb.toml sets [paths] tree to a file that is "
       "not there: no hypothesis is read", "correct the path, or create the file"),
    _r("KB005", "error", "snapshot", "config", "a folder of kb.toml's [paths] (Problems, "
       "experiments…) or a folder above one or above tree.md is a symlink: git tracks the link, "
       "not the files under it, so kb reads nothing there and writes nothing through it",
       "replace the link by the folder itself (its files copied in and added with git add -A), "
       "or, when it leads inside the KB, point the [paths] key at where it leads"),
    # -- parsing (kb index) -------------------------------------------------------
    _r("KB100", "error", "snapshot", "parse", "a file whose lines end in CR alone (classic Mac "
       "OS line ends, no LF at all): kb reads it as one line, so nothing in it is read",
       "convert the line ends to LF (or CRLF)"),
    _r("KB101", "error", "snapshot", "parse", "file is not valid UTF-8",
       "re-save the file as UTF-8"),
    _r("KB102", "error", "snapshot", "parse", "frontmatter is not valid YAML (or holds an alias, "
       "or lists and mappings nested more than 64 levels): read as empty",
       "correct the YAML (quote values that contain ': '; write an alias's value out; nest less)"),
    _r("KB103", "error", "snapshot", "parse", "frontmatter key given twice",
       "keep one of the two keys"),
    _r("KB104", "error", "snapshot", "parse", "frontmatter disagrees with an anchor line",
       "make the frontmatter field and the anchor agree (or drop one)"),
    _r("KB105", "warning", "snapshot", "parse", "frontmatter key is a YAML 1.1 boolean (on/off/yes/no)",
       "quote the key", True),
    _r("KB106", "error", "snapshot", "parse",
       "a symlink kb does not read: its target leaves the work tree (absolute, or above the "
       "top), leaves the KB's folder (a KB in a subfolder of the repository), or does not exist; "
       "also a symlink under a folder of cards or experiments (Propos/外部) whose target leaves "
       "the KB, a folder's or a file's",
       "replace the symlink by a regular file (a folder link: by the folder itself) inside the KB"),
    _r("KB107", "error", "snapshot", "parse", "a NUL byte in a Markdown file",
       "delete the NUL bytes (git treats the file as binary)"),
    _r("KB108", "warning", "snapshot", "parse", "a Markdown file under a folder of cards or "
       "experiments where kb reads none (Problems/sub/P001.md, Propos/P001.md): kb does not read it",
       "move it to where its kind goes (Problems/<id>.md, Propos/<category>/<id>.md, …) with git "
       "mv, or out of the folder"),
    _r("KB109", "warning", "snapshot", "parse", "tree.md's frontmatter names with 'id:' a "
       "hypothesis the file does not declare: its fields apply to none",
       "write the id of a hypothesis of the file, or declare it"),
    _r("KB110", "warning", "snapshot", "parse", "full-width colon '：' where ':' belongs",
       "write ':' (kb verify --fix)", True),
    _r("KB111", "error", "snapshot", "parse", "bold anchor in tree.md (anchors are never bold)",
       "write the plain anchor 'Key: value' (kb verify --fix)", True),
    _r("KB112", "error", "snapshot", "parse", "single-valued anchor key given twice in one block",
       "keep one of the two lines"),
    _r("KB113", "error", "snapshot", "parse", "a declaration that Markdown does not read as a heading "
       "('##H3:' or full-width '＃')", "write '## H3: …' (kb verify --fix)", True),
    _r("KB114", "warning", "snapshot", "parse", "'---' or '===' directly under anchor lines "
       "(a setext heading for Markdown renderers)", "put a blank line before it (kb verify --fix)",
       True),
    _r("KB115", "error", "snapshot", "parse", "hypothesis without a 'Status:' line",
       "add 'Status: 待验' directly under the heading"),
    _r("KB116", "warning", "snapshot", "parse", "headings that look like declarations of another "
       "ID grammar", "set [kb] id_grammar / heading_separators in kb.toml, or ignore"),
    _r("KB117", "warning", "snapshot", "parse", "anchor line outside any hypothesis block",
       "move it directly under its heading (no blank line in between)"),
    _r("KB118", "warning", "snapshot", "parse", "tree anchor written with an alias key (e.g. '状态:')",
       "write the canonical key (kb verify --fix)", True),
    _r("KB119", "error", "snapshot", "parse", "heading that starts with a hypothesis ID but is not "
       "a declaration ('## H2 Statement', '## **H2** Statement', '## H2. Statement'): it declares "
       "nothing, yet the ID is taken", "write '## H2: Statement' (kb verify --fix when the rewrite "
       "is certain)", True),
    _r("KB120", "warning", "snapshot", "parse", "list anchor written as a comma list or empty",
       "write a JSON array such as [\"q1\",\"p2\"] (kb verify --fix)", True),
    _r("KB121", "error", "snapshot", "parse", "list anchor cannot be read (not a JSON array of IDs, "
       "or arrays nested too deeply to read)", "write a JSON array of IDs"),
    _r("KB122", "error", "snapshot", "parse", "malformed entry or application line (not read)",
       "write '### 解法 N｜<title>｜概率<0..1>｜状态未定论' ('### 应用 N｜<time>｜问题 <qid>' in a "
       "method; kb verify --fix when only the separators are off: spaces around '｜', or '|')", True),
    _r("KB123", "error", "snapshot", "parse", "entry probability is not a number",
       "write a number in [0,1] after 概率"),
    _r("KB124", "error", "snapshot", "parse", "numeric anchor is not a number",
       "write a number in [0,1]"),
    _r("KB125", "error", "snapshot", "parse", "'优先级' is not an integer or 'never'",
       "write an integer or never"),
    _r("KB126", "warning", "snapshot", "parse", "a non-empty tree, experiment or card from which kb "
       "reads nothing (hypotheses in tables, bold list items or other headings; fields written "
       "'status: …' or '状态：…'): one report of what is there and what kb reads",
       "rewrite the file in kb's format; the message gives the rewrite when it is certain "
       "(it reads back as the same IDs and nesting)"),
    _r("KB127", "error", "snapshot", "parse", "an entry or application heading ('### 解法 1｜…', "
       "'### 证明 …', '### 应用 …') above the card's first '## ' section: kb reads entries only "
       "under a section, so it is not read", "put the section heading above it ('## 解法候选', "
       "'## 证明尝试', '## 证伪尝试', '## 应用记录'; kb verify --fix when certain)", True),
    _r("KB128", "warning", "snapshot", "parse", "a heading shaped like a declaration or an entry "
       "inside a block quote, a list item or an indent ('> ## H4: …', '- ### 解法 1｜…'), or an "
       "entry heading right under an HTML block that ends only at a blank line ('</details>'): "
       "kb reads those only as headings at the start of a line outside any block, so it is not read",
       "if it is one, write the heading at the start of the line (a blank line above it after "
       "HTML); if it is a quotation, ignore"),
    _r("KB129", "warning", "snapshot", "parse", "a fenced code block or an HTML comment (or other "
       "HTML block with a closing text) never closed: it runs to the end of the file and hides every "
       "declaration, entry and anchor line after it", "close it ('```', '-->') where it should end"),
    _r("KB130", "warning", "snapshot", "parse", "experiment title line missing or malformed",
       "write '# Exxx: <hypothesis ID> - <action>' as the first heading"),
    _r("KB131", "error", "snapshot", "parse", "experiment **Date** is not YYYY-MM-DD",
       "write the date as YYYY-MM-DD"),
    _r("KB133", "warning", "snapshot", "verify", "a .md file whose name is not UTF-8 (kb does not "
       "read it)", "rename it to a UTF-8 name (git mv)"),
    _r("KB134", "warning", "snapshot", "verify", "a symlink under a folder of cards or "
       "experiments (Propos/外部) that leads to a folder inside the KB: git tracks the link, not "
       "the files it shows, so kb reads nothing through it (the files count where they are)",
       "remove the link (git rm), or move the files to where the link stands (git mv)"),
    _r("KB132", "error", "snapshot", "parse", "finished experiment whose '## 结果' has no '**结论**' line",
       "add '**结论**: 支持|推翻|不确定 …' under '## 结果'"),
    _r("KB140", "warning", "snapshot", "parse", "card without its H1 '# <kind>｜<title>', or whose "
       "H1 is another heading ('# x'; a direction log's is '# 研究方向日志｜<problem> / <direction>'): "
       "the card is read by its anchor lines", "add the H1 line, or write it in that form"),
    _r("KB141", "warning", "snapshot", "parse", "card H1 names another kind",
       "correct the kind word of the H1"),
    _r("KB142", "error", "snapshot", "parse", "a card's entry numbered as an earlier entry of its "
       "kind ('### 解法 1' twice): kb verdict and the verification records name an entry by its "
       "number", "renumber the later entry (the message names a free number)"),
    _r("KB143", "error", "snapshot", "parse", "a card's entry numbered 0 ('### 解法 0'): entries "
       "are numbered from 1 (VIBEMATH-V3) and kb verdict names no entry 0",
       "renumber the entry (the message names a free number)"),
    _r("KB144", "warning", "snapshot", "parse", "a frontmatter value with an explicit YAML tag "
       "(`!!python/object:…`, `!!int`): kb ignores it and reads the text",
       "remove the tag"),
    _r("KB150", "warning", "snapshot", "parse", "oddity in a progress direction log",
       "correct the direction header (logs never fail a check)"),
    _r("KB190", "error", "snapshot", "parse", "unresolved merge conflict (git's <<<<<<< ======= "
       ">>>>>>> markers); nothing else is read from the file",
       "resolve the conflict (keep the right lines, delete the markers); `kb sync` merges tree.md "
       "by meaning"),
    _r("KB191", "error", "snapshot", "verify", "`kb verify --staged` during a stopped merge, "
       "rebase or cherry-pick: a KB file (or kb.toml) has unmerged index entries (git's conflict "
       "stages) and no resolved version; kb checks HEAD's version in its place",
       "resolve the conflicts and `git add` the file; or `git merge --abort`, then `kb sync`"),
    _r("KB199", "error", "snapshot", "parse", "file could not be parsed (nested too deeply)",
       "simplify the file's nesting"),
    # -- snapshot rules (kb verify) ----------------------------------------------
    _r("KB201", "error", "snapshot", "verify", "hypothesis ID does not match the ID grammar "
       "(default H<n>(.<n>)*, no leading zeros)",
       "renumber with a valid ID (new IDs only; an existing ID needs kb hyp edit --reason)"),
    _r("KB202", "error", "snapshot", "verify", "the same ID is declared twice (both locations named)",
       "give the later declaration the next free ID"),
    _r("KB203", "error", "snapshot", "verify", "heading level does not match the ID depth "
       "(H1 is ##, H1.1 is ###, …)", "use the heading level of the ID's depth (kb verify --fix)",
       True),
    _r("KB204", "error", "snapshot", "verify", "Parent:/Children: lines disagree with the IDs",
       "write the derived Parent:/Children: lines (kb verify --fix)", True),
    _r("KB205", "error", "snapshot", "verify", "unknown status, conclusion, 来源 or 类型 word",
       "use a word of the vocabulary (kb rules lists them in the message)"),
    _r("KB206", "error", "snapshot", "verify", "被支持/被推翻 hypothesis without evidence",
       "add the experiment IDs to Evidence:, or set the status back with kb hyp status --force"),
    _r("KB207", "error", "snapshot", "verify", "finished experiment (已完成) without a conclusion",
       "write '**结论**: 支持|推翻|不确定 …' under '## 结果'"),
    _r("KB208", "error", "snapshot", "verify", "experiment file name disagrees with its ID",
       "name the file <ID>.md (a new experiment; existing files are never renamed)"),
    _r("KB209", "error", "snapshot", "verify", "card '- ID:' anchor disagrees with the file name",
       "make the ID anchor equal to the file name"),
    _r("KB210", "error", "snapshot", "verify", "Evidence names an experiment that does not exist",
       "create the experiment or correct the ID"),
    _r("KB211", "error", "snapshot", "verify", "experiment tests a hypothesis that does not exist",
       "correct the hypothesis ID in the title and **Hypothesis** line"),
    _r("KB212", "error", "snapshot", "verify", "dependency (依赖) names an object that does not exist",
       "create the object or correct the ID"),
    _r("KB213", "error", "snapshot", "verify", "dependency cycle", "remove one dependency of the cycle"),
    _r("KB214", "error", "snapshot", "verify", "可信断言 names an object without a Verified card",
       "list only verified claims (Verified/) in 可信断言"),
    _r("KB215", "error", "snapshot", "verify", "method hierarchy disagrees: 上级体系 and 子方法 "
       "must name each other", "add the missing side, or remove the one-sided link"),
    _r("KB216", "warning", "snapshot", "verify", "被依赖 disagrees with the problems' 依赖 lists",
       "write the derived 被依赖 list (kb verify --fix)", True),
    _r("KB217", "warning", "snapshot", "verify", "a settled object without its Verified card",
       "settle it with kb verdict (which writes the card), or write the card"),
    _r("KB218", "error", "snapshot", "verify", "probability outside [0,1] (never clamped)",
       "write a number between 0 and 1"),
    _r("KB219", "error", "snapshot", "verify",
       "a path Windows reserves, or two paths that differ only in case or normalisation",
       "rename the file (git mv) to a portable, distinct name"),
    _r("KB220", "error", "snapshot", "verify", "a card without the header anchor of its state "
       "('- 状态:'; a proposition's '- 概率:', a Verified card's '- 结论:' and '- 概率:') or without "
       "a title ('- 标题:' or the H1's): kb reads it as empty",
       "write the missing anchor lines under the H1 (VIBEMATH-V3.md lists each card's)"),
    _r("KB221", "error", "snapshot", "verify", "a Verified card whose object is not settled or "
       "does not exist", "remove the card: kb verdict writes it when the object settles"),
    _r("KB222", "error", "snapshot", "verify", "a hypothesis heading states nothing (empty, or "
       "only characters that show nothing, after '<ID>:')",
       "write the statement after '<ID>: ' (committed already: kb hyp edit <ID> \"…\" --reason R)"),
    _r("KB223", "warning", "snapshot", "verify", "a card's entry heading with no title (empty, or "
       "only characters that show nothing, between its first two '｜'), or a title holding a "
       "control or bidirectional character (it reads as other text)",
       "write the entry's title: '### 解法 N｜<title>｜概率x｜状态y'"),
    _r("KB240", "warning", "snapshot", "verify", "DASHBOARD.md is stale (not what `kb dashboard` "
       "renders for this tree); [rules] dashboard_stale = \"error\" makes it an error",
       "run `kb dashboard` (or kb verify --fix) and commit DASHBOARD.md", True),
    _r("KB241", "warning", "snapshot", "verify", "TRAIL.md is stale (not what `kb trail render` "
       "renders from the exploration graph's log)", "run `kb trail render` (it commits TRAIL.md)"),
    _r("KB242", "warning", "snapshot", "verify", "the exploration graph's log (.explore-tree/ops/) "
       "has a torn or corrupt entry, or an operation replay cannot apply (what `kb trail check` "
       "lists); kb reads the log without it", "restore a torn or corrupt entry from git history; an "
       "operation that no longer applies after a merge needs nothing (re-record it if it still matters)"),
    _r("KB243", "warning", "snapshot", "verify", "a verification record (Logs/Verification/*.json) "
       "is not JSON or not a valid record (r not a record ID; verdict or a result not a number in "
       "[0,1]; a result without a verifier; at not a time): kb leaves it out of verifiers' "
       "accuracy, verdict weights and reports; or no verdict could have written it (a verifier "
       "twice, fewer verifiers than [verdict] min_votes, a verdict its results cannot give under "
       "its mode): it settles nothing (KB312)", "correct or remove a record not yet committed; a "
       "committed one stays (records are append-only, KB310) and is left out — record the verdict "
       "again with `kb verdict` if it still matters"),
    _r("KB260", "error", "snapshot", "verify", "unsafe ID in a card (path separator, '..' or a "
       "control character) — the file name, '- ID:' or an ID an anchor names",
       "rename to a safe ID (letters, digits, CJK, '-', '_'); correct the anchor"),
    # -- history rules (base -> new) ----------------------------------------------
    _r("KB245", "warning", "snapshot", "verify", ".gitattributes names a kb merge driver this clone "
       "has not registered (kb verify in the working tree only)",
       "run `kb hooks install` or `kb sync` to register kb's merge drivers"),
    _r("KB246", "warning", "snapshot", "verify", "git gives kb's merge drivers to some of the KB's "
       "files but not to one kb.toml places (a [paths] setting moved past its .gitattributes line, "
       "or a KB made before kb wrote that line; kb verify in the working tree only)",
       "add kb's line to .gitattributes and commit it: `kb sync` does both"),
    _r("KB301", "error", "history", "verify", "a hypothesis, experiment or card was removed",
       "restore it (mark a refuted hypothesis 被推翻 instead); or record Kb-Override: <ID> <reason>"),
    _r("KB302", "error", "history", "verify", "an ID was reassigned to a different statement",
       "restore the statement and add a new ID; or kb hyp edit <ID> \"…\" --reason R"),
    _r("KB303", "error", "history", "verify", "Evidence shrunk or reordered (append only)",
       "restore the removed/reordered IDs and append new ones at the end"),
    _r("KB304", "error", "history", "verify", "a file under Verified/ was modified or deleted",
       "restore it: git restore --source=HEAD --staged --worktree -- <path>"),
    _r("KB305", "error", "history", "verify", "an experiment file was renamed",
       "move it back to its original name"),
    _r("KB306", "error", "history", "verify", "illegal status move (e.g. 被推翻 -> 待验, 已完成 -> 进行中)",
       "restore the status; or kb hyp status <ID> <status> --force --reason R"),
    _r("KB307", "error", "history", "verify", "a new ID is lower than or equal to one that existed "
       "before (IDs are never reused)", "use the next free ID (above every existing sibling)"),
    _r("KB308", "error", "history", "verify", "the recorded result of an experiment was changed: "
       "its '## 结果' through the '**结论**' line (the data, the conclusion, its reason); a note "
       "after it, '## 影响' and the other sections stay free",
       "restore it and record a new experiment (or Kb-Override: <ID> <reason>)"),
    _r("KB310", "error", "history", "verify", "a verification record (Logs/Verification/) was "
       "modified or deleted (records are append-only)",
       "restore it: git restore --source=HEAD --staged --worktree -- <path>; a new verdict is a "
       "new record (kb verdict)"),
    _r("KB311", "error", "history", "verify", "an entry a verdict settled (状态已验 at 概率0 or 1) "
       "was changed or removed: its heading or its text (the proof under it)",
       "restore the entry as the verdict wrote it; or record Kb-Override: <ID> <reason>"),
    _r("KB312", "error", "history", "verify", "a problem or proposition was settled (已解决, "
       "已验证·真/假), a Verified card added, or an entry (or a proposition's 概率) moved to "
       "probability 0 or 1, with no valid verification record (Logs/Verification/, KB243) that "
       "settles it so", "restore the status or value, or remove the card, and settle it with a "
       "verdict (kb verdict <ID>#解法N / #证明N / #证伪N, kb promote for a judge problem); or "
       "record Kb-Override: <ID> <reason>"),
    _r("KB313", "error", "history", "verify", "an operation file of the exploration graph's log "
       "(.explore-tree/ops/) was modified or deleted (the log is append-only: one immutable "
       "file per recording)",
       "restore it: git restore --source=HEAD --staged --worktree -- <path>; a correction is a "
       "new recording (kb trail set / move / archive)"),
    _r("KB350", "error", "history", "verify", "an ID the branch adds is already taken on the target "
       "branch with other content, or an entry number the branch adds to a card the target "
       "added to it too (--against)",
       "run `kb sync` to renumber the branch's IDs and entries and every reference in one commit"),
    _r("KB309", "error", "history", "verify",
       "kb.toml weakens a rule, moves a path of the record or changes how it is read "
       "(id_grammar, heading_separators)",
       "undo the kb.toml change, or accept it with Kb-Override: <code, paths.key or kb.key> <reason>"),
    _r("KB380", "error", "history", "verify", "a staged change to a path whose write lock another "
       "owner holds (the pre-commit hook; and a pushed one in the pre-commit framework's "
       "pre-push stage; the owner is KB_OWNER, else kb.owner, else user.email)",
       "wait for the holder's `kb lock release`, or claim the path once its lease is over "
       "(kb lock status / claim / steal)"),
    _r("KB390", "error", "history", "verify", "history checks need full history (shallow clone)",
       "git fetch --unshallow (actions/checkout: fetch-depth: 0)"),
)

BY_CODE: dict[str, RuleInfo] = {r.code: r for r in CATALOGUE}


def rule_info(code: str) -> Optional[RuleInfo]:
    """The catalogue row of ``code``, or None for a code kb does not know."""
    return BY_CODE.get(code)


def effective_severity(code: str, default: str, config: Any = None) -> Optional[str]:
    """The severity of ``code`` under ``config`` (a :class:`kb.config.Config`).

    Returns None when the code is disabled (``[rules] disable`` or severity
    ``"off"``). ``default`` is the severity the rule emitted.
    """
    if config is None:
        return default
    if code in config.disabled_rules:
        return None
    sev = config.severity.get(code)
    if sev is None:
        return default
    if sev == "off":
        return None
    return sev
