"""Credential stores are denied with no rule written: Read, Glob, Grep and Bash keep them out, in
every mode, even with the working directory at the home directory; an explicit allow rule lifts
one path, a deny rule of the person's own is never lifted.

Each test runs the real tools through Agent and ScriptedModel with HOME pointed at a fake home
that holds the stores, and looks at what the model was sent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.config.grants import SessionGrants
from ipy_agent.permissions.rules import CREDENTIAL_STORES, builtin_read_denies
from ipy_agent.tools import builtin_tools
from ipy_agent.ui.inspection import tools_text
from tests.support.tools import write_tree
from tests.support.transcript import results_of, use

SECRET = "CREDENTIAL-VALUE-4711"
STORES = {
    ".ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n",
    ".ssh/config": "Host example\n  User me\n",
    ".aws/credentials": f"[default]\naws_secret_access_key = {SECRET}\n",
    ".gnupg/private-keys-v1.d/k.key": SECRET,
    ".netrc": f"machine example.com login me password {SECRET}\n",
    ".docker/config.json": json.dumps({"auths": {"r": {"auth": SECRET}}}),
    ".kube/config": f"token: {SECRET}\n",
    ".config/gcloud/credentials.db": SECRET,
    ".git-credentials": f"https://me:{SECRET}@example.com\n",
    ".pypirc": f"[pypi]\npassword = {SECRET}\n",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    write_tree(home, {**STORES, "notes.txt": "plain notes\n"})
    monkeypatch.setenv("HOME", str(home))
    return home


def _run(cwd: Path, calls: list[dict], **kw) -> tuple[dict[str, dict], str]:
    model = ScriptedModel([calls, "done"])
    agent = Agent(model=model, cwd=cwd, tools=builtin_tools(), **kw)
    agent.run("look around")
    return results_of(agent.messages[2]), json.dumps(model.requests)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_every_store_is_denied_to_read_in_every_mode_even_with_cwd_at_home(home, mode):
    calls = [use("Read", f"r{i}", file_path=str(home / rel)) for i, rel in enumerate(STORES) if rel != ".ssh/config"]
    results, sent = _run(home, calls, permission_mode=mode)
    assert len(results) == len(calls)
    for r in results.values():
        assert r.get("is_error") and "built-in" in r["content"], r
    assert SECRET not in sent


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
def test_searches_and_shell_reads_from_home_leave_the_stores_out(home, mode, need_bwrap):
    calls = [
        use("Grep", "g1", pattern="CREDENTIAL", path=str(home)),
        use("Grep", "g2", pattern="CREDENTIAL", path=str(home), output_mode="content"),
        use("Glob", "g3", pattern="**/*", path=str(home)),
        use("Bash", "b1", command="cat ~/.ssh/id_rsa"),
        use("Bash", "b2", command=f"cat {home}/.aws/credentials"),
    ]
    # Judged read-only, or run by bypassPermissions: sandboxed either way, the stores masked.
    calls.append(use("Bash", "b3", command="grep -r CREDENTIAL ."))
    results, sent = _run(home, calls, permission_mode=mode)
    assert SECRET not in sent
    listing = results["g3"]["content"].split("\n\n")[0]  # the paths, before the note naming the rules
    assert listing == "notes.txt"
    assert "10 files hidden by deny rules" in results["g3"]["content"]
    assert results["b1"].get("is_error") and "Read(~/.ssh)" in results["b1"]["content"]
    assert results["b2"].get("is_error") and "Read(~/.aws)" in results["b2"]["content"]


def test_an_explicit_allow_rule_lifts_one_path_and_the_rest_stays_denied(home):
    calls = [
        use("Read", "ok", file_path=str(home / ".ssh/config")),
        use("Read", "no", file_path=str(home / ".ssh/id_rsa")),
    ]
    results, sent = _run(home, calls, allow=["Read(~/.ssh/config)"])
    assert "Host example" in results["ok"]["content"]
    assert results["no"].get("is_error") and SECRET not in sent


@pytest.mark.parametrize("broad", ["Read", "Read(**)", "Read(~/**)", "Read(//**)"])
def test_an_allow_rule_that_names_no_store_lifts_nothing(home, broad):
    results, sent = _run(home, [use("Read", "r", file_path=str(home / ".aws/credentials"))], allow=[broad])
    assert results["r"].get("is_error") and "Read(~/.aws)" in results["r"]["content"]
    assert SECRET not in sent


def test_a_deny_rule_of_the_persons_own_is_never_lifted(home):
    calls = [use("Read", "r", file_path=str(home / ".ssh/config"))]
    results, _ = _run(home, calls, allow=["Read(~/.ssh/config)"], deny=["Read(~/.ssh/config)"])
    assert results["r"].get("is_error") and "(argument)" in results["r"]["content"]


def test_env_files_are_denied_outside_the_working_tree_only(home):
    write_tree(home, {"other/.env": f"TOKEN={SECRET}\n"})
    project = write_tree(home / "project", {".env": "LOCAL=1\n", "app.py": "print(1)\n"})
    calls = [
        use("Read", "inside", file_path=str(project / ".env")),
        use("Read", "outside", file_path=str(home / "other/.env")),
        use("Bash", "bash", command="cat ../other/.env"),
    ]
    results, sent = _run(project, calls, permission_mode="bypassPermissions")
    assert "LOCAL=1" in results["inside"]["content"]
    assert results["outside"].get("is_error") and "Read(//**/.env*)" in results["outside"]["content"]
    assert results["bash"].get("is_error") and SECRET not in sent
    # The person's own rule hides the project's .env too.
    results, _ = _run(project, calls[:1], deny=["Read(.env)"])
    assert results["inside"].get("is_error")


def test_the_kernels_connection_files_are_denied(tmp_path, monkeypatch):
    runtime = next(r.specifier for r in builtin_read_denies() if r.specifier and "runtime" in r.specifier)
    folder = Path(runtime[1:])
    folder.mkdir(parents=True, exist_ok=True)
    conn = folder / "kernel-ipyagent-test.json"
    conn.write_text(json.dumps({"key": SECRET}))
    try:
        results, sent = _run(tmp_path, [use("Read", "r", file_path=str(conn))], permission_mode="bypassPermissions")
    finally:
        conn.unlink()
    assert results["r"].get("is_error") and SECRET not in sent


def test_the_rule_listings_show_the_built_in_rules_and_what_lifts_them(home):
    agent = Agent(model=ScriptedModel(["x"]), cwd=home, allow=["Read(~/.ssh/config)"])
    for text in (tools_text(agent), SessionGrants().listing(agent.rules, agent.cwd)):
        assert "Built-in deny rules" in text
        for store in CREDENTIAL_STORES:
            assert f"Read({store})" in text
        assert "Read(~/.ssh)  lifted where Read(~/.ssh/config) allow" in text


def test_a_literal_bang_in_a_deny_rule_is_a_file_name(tmp_path):
    write_tree(tmp_path, {"!notes": "x\n", "notes": "y\n"})
    results, _ = _run(
        tmp_path, [use("Read", "a", file_path="!notes"), use("Read", "b", file_path="notes")], deny=["Read(!notes)"]
    )
    assert results["a"].get("is_error") and not results["b"].get("is_error")
    assert os.path.exists(tmp_path / "notes")


def test_the_deny_list_reads_like_a_gitignore(tmp_path):
    from ipy_agent.base.gitignore import first_matching

    specs = ("//**/.env*", f"!/{tmp_path}/**/.env*", "~/.ssh", "!~/.ssh/config", "secret/**")
    home = os.path.expanduser("~")
    assert first_matching(specs, [f"{home}/.ssh/id_rsa"], cwd=tmp_path) == "~/.ssh"
    assert first_matching(specs, [f"{home}/.ssh/config"], cwd=tmp_path) is None
    assert first_matching(specs, [str(tmp_path / "a/.env")], cwd=tmp_path) is None
    assert first_matching(specs, ["/srv/.env.local"], cwd=tmp_path) == "//**/.env*"
    assert first_matching(specs, [str(tmp_path / "secret/.env")], cwd=tmp_path) == "secret/**"
    # One of several paths (a link and its target) is enough.
    assert first_matching(specs, [str(tmp_path / "x"), f"{home}/.ssh/id_rsa"], cwd=tmp_path) == "~/.ssh"
