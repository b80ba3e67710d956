"""Where kb was installed from (PEP 610 ``direct_url.json``), for ``kb ci init`` and the hooks."""

from __future__ import annotations

import json

from kb.review.source import install_hint, installed_source, refusal, source_from


def test_index_install_pins_the_version():
    s = source_from("0.3.1", None)
    assert (s.spec, s.how) == ("kb-research==0.3.1", "index")


def test_vcs_install_pins_the_commit():
    raw = json.dumps({"url": "https://github.com/acme/kb.git",
                      "vcs_info": {"vcs": "git", "requested_revision": "main", "commit_id": "a" * 40},
                      "subdirectory": "tools/kb"})
    s = source_from("0.3.1", raw)
    assert s.spec == f"git+https://github.com/acme/kb.git@{'a' * 40}#subdirectory=tools/kb"
    assert s.how == "vcs"


def test_archive_url_is_kept_and_local_files_are_not_sources():
    wheel = "https://files.example.org/kb_research-0.3.1-py3-none-any.whl"
    assert source_from("0.3.1", json.dumps({"url": wheel, "archive_info": {}})).spec == wheel
    local = source_from("0.3.1", json.dumps({"url": "file:///home/me/dist/kb_research-0.3.1-py3-none-any.whl",
                                             "archive_info": {}}))
    assert local.spec is None and local.how == "local" and "/home/me/dist" in local.detail
    editable = source_from("0.3.1", json.dumps({"url": "file:///src/kb", "dir_info": {"editable": True}}))
    assert editable.spec is None and "editable" in editable.detail
    assert source_from("0.3.1", "{not json").spec is None


def test_this_environment_and_the_messages():
    # The test environment runs an editable install of the checkout.
    s = installed_source()
    assert s.spec is None and s.how == "local"
    msg = refusal(s)
    assert "--install SPEC" in msg and "git+https://" in msg
    assert install_hint("kb-research==0.3.1") == "python -m pip install 'kb-research==0.3.1'"
    assert "kb-research" not in install_hint(None).replace("kb.git", "")
