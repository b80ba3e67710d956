"""`kb rules` (the catalogue) and `kb ci init` (the GitHub Actions workflow)."""

from __future__ import annotations

import yaml

from conftest import git, invoke
from test_verify_support import make_repo


def test_rules_lists_every_code_with_severity_family_and_fix(make_kb):
    from kb.checks.catalogue import CATALOGUE

    res = invoke("rules")
    assert res.code == 0
    for r in CATALOGUE:
        assert r.code in res.stdout
    assert "KB110" in res.stdout and "KB304" in res.stdout and "KB240" in res.stdout
    data = invoke("rules", "--json").json()["rules"]
    by = {r["code"]: r for r in data}
    assert by["KB240"]["severity"] == "warning" and by["KB240"]["family"] == "snapshot"
    assert by["KB304"]["family"] == "history" and by["KB111"]["stage"] == "parse"
    assert all(r["fix"] and r["summary"] for r in data)
    assert {r["code"][:3] for r in data} >= {"KB1", "KB2", "KB3"}


def test_rules_show_the_kbs_severity_overrides(make_kb):
    root = make_repo(make_kb, config='[kb]\n[rules]\ndashboard_stale = "error"\ndisable = ["KB217"]\n')
    data = invoke("rules", "--json", "KB240", "KB217", cwd=root).json()["rules"]
    eff = {r["code"]: r["effective_severity"] for r in data}
    assert eff == {"KB240": "error", "KB217": "off"}
    res = invoke("rules", "KB240", cwd=root)
    assert "error (default warning)" in res.stdout
    assert invoke("rules", "KB999").code == 2



def test_rules_unknown_code_is_a_usage_error_in_json_as_in_text(make_kb):
    """An unknown code: exit 2 with the error object every usage error prints under
    --json (not a catalogue with an ``unknown`` list); the text output lists the known
    codes asked for and names each unknown one on stderr."""
    root = make_repo(make_kb)
    res = invoke("rules", "KB240", "kb999", "--json", cwd=root)
    assert res.code == 2
    assert res.json() == {"error": {"message": "unknown rule code KB999", "exit_code": 2,
                                    "kind": "usage"}}
    assert "unknown rule code KB999" in res.stderr
    two = invoke("rules", "KB998", "KB999", "--json", cwd=root)
    assert two.code == 2 and two.json()["error"]["message"] == "unknown rule codes KB998, KB999"
    text = invoke("rules", "KB240", "KB999", cwd=root)
    assert text.code == 2 and text.stdout.startswith("KB240 ")
    assert text.stderr == "kb: unknown rule code KB999\n"


def test_ci_init_writes_the_workflow(make_kb):
    root = make_repo(make_kb)
    wf = root / ".github" / "workflows" / "kb-verify.yml"
    # This kb is an editable install: CI cannot reach it, so kb refuses and says what to pass.
    res = invoke("ci", "init", cwd=root)
    assert res.code == 1 and "--install SPEC" in res.stderr and not wf.exists()
    spec = "git+https://example.org/kb.git@v0.1.0"
    res = invoke("ci", "init", "--install", spec, cwd=root)
    assert res.code == 0, res.stderr
    text = wf.read_text(encoding="utf-8")
    assert 'kb verify --range "$KB_RANGE" ${KB_AGAINST:+--against "$KB_AGAINST"} ${KB_REWRITE:+--rewrite} --format github' \
        in text and "kb-research" not in text
    assert 'echo "against=origin/$KB_BASE"' in text  # a pull request passes its target
    data = yaml.safe_load(text)
    assert data["env"]["KB_INSTALL"] == spec
    assert data["env"]["KB_BASE"] == "${{ github.base_ref || 'main' }}"
    steps = data["jobs"]["kb"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    assert invoke("ci", "init", "--install", spec, cwd=root).code == 1  # refuses to overwrite
    assert wf.read_text(encoding="utf-8") == text
    res = invoke("ci", "init", "--force", "--base", "develop", "--install", spec, cwd=root)
    assert res.code == 0 and "github.base_ref || 'develop'" in wf.read_text(encoding="utf-8")
    assert invoke("ci", "init", "--force", "--base", "a b", "--install", spec, cwd=root).code == 2
    assert git(root, "status", "--porcelain", "--", ".github") != ""


def test_templates_and_hooks_ship_in_the_package():
    from kb.resources import hooks_dir, template

    assert "@BASE@" in template("github-workflow.yml")
    assert (hooks_dir() / "kb-hook.sh").is_file()


def test_fix_repairs_what_a_first_fix_reveals_in_one_run(make_kb):
    """##H3: Broken heading
    **Status**: 待验
    — the heading fix exposes the bold anchor; one `kb verify --fix` repairs both."""
    tree = ("# Hypothesis Tree\n\n## H1: First\nStatus: 待验\nEvidence: (empty)\n\n"
            "##H2: Broken heading\n**Status**: 待验\nEvidence: (empty)\n")
    root = make_kb({"tree.md": tree}, commit=True)
    r = invoke("verify", "--fix", cwd=root)
    text = (root / "tree.md").read_text(encoding="utf-8")
    assert "## H2: Broken heading\nStatus: 待验\n" in text
    assert "KB111" not in r.stdout and "KB113" not in r.stdout


def test_apply_fixes_names_every_skipped_fix(tmp_path) -> None:
    """A fix whose line changed since the check, or a second fix of a line already
    fixed, is skipped and named as path:line with the reason (not just counted)."""
    from kb.checks.fix import apply_fixes
    from kb.checks.report import Finding

    doc = tmp_path / "tree.md"
    doc.write_text("# Tree\n\n##H1: a\nStatus: 待验\n", encoding="utf-8")

    def finding(line: int, old: str, new: str) -> Finding:
        return Finding(path="tree.md", line=line, col=1, code="KB113", severity="error",
                       message="m", family="format", kb_path="tree.md", kb_root=str(tmp_path),
                       fix=(line, old, new))

    res = apply_fixes([finding(3, "##H1: a", "## H1: a"), finding(3, "##H1: a", "## H1: A"),
                       finding(4, "Status: 待", "Status: 待验")])
    assert res.applied == 1 and res.skipped == 2
    assert sorted(res.skipped_at) == sorted([f"{doc}:3: another fix changed this line",
                                             f"{doc}:4: the line had changed"])
    assert doc.read_text(encoding="utf-8").splitlines()[2] in ("## H1: a", "## H1: A")
