"""Credentials stay out: no process a tool starts sees them, and should one reach a result, it is
redacted before the model, the trace, the person's view or a saved conversation sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.base.secrets import is_secret_name, tool_environ
from ipy_agent.tools import builtin_tools
from tests.support.tools import write_tree
from tests.support.transcript import results_of, use

KEY = "sk-ant-api03-ipyagent-TEST-0123456789abcdefghijklmnop"
TOKEN = "ghp_ipyagentTESTtoken0123456789"


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-ipyagent-TEST-secret-value")
    monkeypatch.setenv("IPY_AGENT_HARMLESS", "visible-value-123")


def _agent(cwd: Path, turns: list, **kw) -> Agent:
    return Agent(model=ScriptedModel(turns), cwd=cwd, tools=builtin_tools(), **kw)


@pytest.mark.parametrize(
    "name,secret",
    [
        ("ANTHROPIC_API_KEY", True),
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("DB_PASSWORD", True),
        ("MY_SERVICE_SECRET", True),
        ("HF_TOKEN", True),
        ("PATH", False),
        ("HOME", False),
        ("LANG", False),
        ("PYTHONPATH", False),
        ("VIRTUAL_ENV", False),
        ("TERM", False),
    ],
)
def test_names_that_look_like_credentials(name, secret):
    assert is_secret_name(name) is secret


def test_the_lists_are_configurable(monkeypatch):
    monkeypatch.setenv("IPY_AGENT_SECRET_ENV", "CORP_*, INTERNAL_URL")
    monkeypatch.setenv("IPY_AGENT_PASS_ENV", "GITHUB_TOKEN")
    assert is_secret_name("CORP_THING") and is_secret_name("internal_url")
    assert not is_secret_name("GITHUB_TOKEN")
    assert "GITHUB_TOKEN" in tool_environ()


@pytest.mark.parametrize("approved", [False, True], ids=["sandboxed", "approved"])
def test_bash_gets_no_credentials(tmp_path, approved):
    commands = [
        "env",
        "printenv ANTHROPIC_API_KEY",
        'echo "k=$ANTHROPIC_API_KEY t=$GITHUB_TOKEN"',
        "cat /proc/self/environ",
    ]
    turns = [[use("Bash", f"t{i}", command=c) for i, c in enumerate(commands)], "done"]
    agent = _agent(tmp_path, turns, **({"allow": ["Bash"]} if approved else {}))
    agent.run("show me the environment")
    results = results_of(agent.messages[2])
    everything = json.dumps(agent.messages)
    assert KEY not in everything and TOKEN not in everything and "aws-ipyagent" not in everything
    assert "visible-value-123" in results["t0"]["content"]  # the rest of the environment is there
    assert results["t1"].get("is_error")  # printenv: no such variable
    assert results["t2"]["content"] == "k= t="


def test_a_key_in_a_file_is_redacted_from_results_trace_detail_and_save(tmp_path):
    from ipy_agent.config.conversation_file import save_conversation

    write_tree(tmp_path, {"config.txt": f"key = {KEY}\n"})
    turns = [
        [
            use("Read", "r1", file_path="config.txt"),
            use("Bash", "b1", command="cat config.txt"),
            use("Grep", "g1", pattern="key", output_mode="content"),
        ],
        "done",
    ]
    agent = _agent(tmp_path, turns)
    agent.run(f"here is my key {KEY}, look at config.txt")
    results = results_of(agent.messages[2])
    for tid in ("r1", "b1", "g1"):
        assert KEY not in json.dumps(results[tid]) and "[redacted $ANTHROPIC_API_KEY]" in json.dumps(results[tid])
    for rec in agent.trace:
        assert KEY not in json.dumps(rec.result) and KEY not in (rec.detail or "")
    save_conversation(agent, tmp_path / "conv.json")
    text = (tmp_path / "conv.json").read_text()
    assert KEY not in text and "[redacted $ANTHROPIC_API_KEY]" in text


def test_a_credential_set_during_the_session_is_redacted_from_the_next_result(tmp_path, monkeypatch):
    # The secret list is cached between tool results; a variable the person sets later counts.
    write_tree(tmp_path, {"a.txt": "token = corp-0123456789-late\n"})
    agent = _agent(
        tmp_path, [[use("Read", "r1", file_path="a.txt")], "one", [use("Read", "r2", file_path="a.txt")], "two"]
    )
    agent.run("read it")
    assert "corp-0123456789-late" in json.dumps(results_of(agent.messages[2])["r1"])
    monkeypatch.setenv("CORP_DEPLOY_TOKEN", "corp-0123456789-late")
    agent.run("again")
    second = json.dumps(results_of(agent.messages[-2])["r2"])
    assert "corp-0123456789-late" not in second and "[redacted $CORP_DEPLOY_TOKEN]" in second
