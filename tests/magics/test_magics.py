"""The magics on a plain InteractiveShell (no kernel): every magic and option, bad options,
%config, save/resume, and the inspect views, with scripted models and the built-in tools."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from traitlets.config import Config

import ipy_agent
from ipy_agent.history.messages import history_problems
from ipy_agent.magics.cell_runner import agent_transformer, run_agent_cell
from tests.support.transcript import edit_script, result_text, results_sent, use

ROOT = Path(__file__).resolve().parents[2]
MAGICS = [
    "agent",
    "agent_stop",
    "agent_tools",
    "agent_rules",
    "agent_inspect",
    "agent_trace",
    "agent_history",
    "agent_reset",
    "agent_save",
    "agent_context",
    "agent_compact",
    "agent_mcp",
    "agent_instructions",
    "agent_skills",
    "agent_tasks",
]


def no_input(prompt: str = "") -> str:
    raise AssertionError(f"nobody should have been asked: {prompt!r}")


# --- extension ------------------------------------------------------------------------------


def test_load_registers_every_magic_and_unload_removes_them(shell):
    line = shell.magics_manager.magics["line"]
    assert all(name in line for name in MAGICS)
    assert "agent" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", "ipy_agent")
    assert not any(name in shell.magics_manager.magics["line"] for name in MAGICS)
    assert "agent" not in shell.magics_manager.magics["cell"]
    assert not any(type(c).__name__ == "AgentMagics" for c in shell.configurables)


def test_loading_twice_is_harmless(shell, script, capsys):
    magics = shell.magics_manager.registry["AgentMagics"]
    ipy_agent.load_ipython_extension(shell)
    shell.run_line_magic("load_ext", "ipy_agent")
    assert shell.magics_manager.registry["AgentMagics"] is magics
    assert sum(type(c).__name__ == "AgentMagics" for c in shell.configurables) == 1
    shell.run_line_magic("agent", f"--script {script('hi there')} hello")
    assert "hi there" in capsys.readouterr().out


def test_transformer_only_in_a_kernel_and_removed_on_unload(make_shell):
    plain = make_shell()
    assert agent_transformer not in plain.input_transformers_cleanup
    sh = make_shell(load=False)
    sh.kernel = object()  # what ipykernel's shell has; the check is `shell.kernel is not None`
    sh.run_line_magic("load_ext", "ipy_agent")
    ipy_agent.load_ipython_extension(sh)
    assert sh.input_transformers_cleanup.count(agent_transformer) == 1
    code = sh.transform_cell("%agent fix it, don't break it\n")
    assert code.startswith("await ") and 'run_agent_cell("fix it, don\'t break it")' in code
    cell = sh.transform_cell("%%agent --mode plan\nline one\nline 'two'\n")
    assert "run_agent_cell('--mode plan', \"line one\\nline 'two'\\n\")" in cell
    assert "await" not in sh.transform_cell("%agent?\n")
    assert "await" not in sh.transform_cell("%agent_rules\n")
    assert "run_tools_cell('')" in sh.transform_cell("%agent_tools\n")  # it waits for the page's answer
    sh.run_line_magic("unload_ext", "ipy_agent")
    assert agent_transformer not in sh.input_transformers_cleanup


@pytest.mark.parametrize(
    "code",
    [
        "import ipy_agent",
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "sh = InteractiveShell.instance(); sh.run_line_magic('load_ext', 'ipy_agent')\n"
        "assert 'agent' in sh.magics_manager.magics['line']",
    ],
)
def test_no_anthropic_import_on_import_or_load(code):
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('anthropic' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_help_comes_from_the_docstrings(shell):
    doc = shell.magics_manager.magics["line"]["agent"].__doc__
    for option in ("--new", "--mode", "--script", "--allow", "--deny", "--background", "--no-widgets", "--resume"):
        assert option in doc
    assert "conversation continues" in doc
    assert "tool_result" in shell.magics_manager.magics["line"]["agent_inspect"].__doc__


def test_the_readme_and_agent_help_name_only_options_and_magics_that_exist(shell):
    """Every `%agent` option the README names is one the parser takes; every magic the README
    and `%agent?`'s "See also" name is registered, and "See also" names every companion magic."""
    from ipy_agent.config.options import AGENT_OPTIONS

    flags = {o.flag for o in AGENT_OPTIONS}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named: set[str] = set()
    for line in readme.splitlines():
        if re.search(r"%agent(?!_)", line) or "--allow/" in line:
            named |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", line))
    named |= {f"--{w}" for w in re.findall(r"--allow/--(\w+)/--(\w+)", readme) for w in w}
    jupyter_options = {"--full", "--allow-root", "--tool-call-parser", "--enable-auto-tool-choice", "--jinja"}
    assert sorted(named - flags - jupyter_options) == []
    registered = set(shell.magics_manager.magics["line"])
    in_readme = set(re.findall(r"%(agent\w*)", readme))
    assert sorted(in_readme - registered) == []
    doc = shell.magics_manager.magics["line"]["agent"].__doc__
    see_also = set(re.findall(r"%(agent\w+)", doc[doc.index("See also") :]))
    assert sorted(see_also - registered) == []
    assert sorted({m for m in registered if m.startswith("agent_")} - see_also) == []
    assert all(o.flag in doc for o in AGENT_OPTIONS)


# --- running ----------------------------------------------------------------------------------


def test_scripted_run_shows_rows_and_the_model_gets_results(shell, magics, script, tmp_path, capsys):
    (tmp_path / "a.txt").write_text("hello\n")
    path = script([{"type": "text", "text": "Let me look."}, use("Read", "t1", file_path="a.txt")], "It says hello.")
    shell.run_line_magic("agent", f"--script {path} what is in a.txt?")
    out = capsys.readouterr().out
    assert "Let me look." in out and "It says hello." in out
    assert "✓ Read a.txt — Read 1 line" in out
    model = magics.session.agent.model
    assert "hello" in result_text(results_sent(model, 1)["t1"])
    assert model.requests[0]["messages"][0]["content"][0]["text"] == "what is in a.txt?"
    assert magics.session.last_result.stop_reason == "end_turn"


def test_conversation_continues_across_cells_and_new_starts_over(shell, magics, script):
    shell.run_line_magic("agent", f"--script {script('first answer')} first question")
    agent = magics.session.agent
    shell.run_line_magic("agent", f"--script {script('second answer')} second question")
    assert magics.session.agent is agent
    sent = magics.session.agent.model.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0]["text"] == "first answer"
    shell.run_line_magic("agent", f"--new --script {script('fresh')} third question")
    assert magics.session.agent is not agent
    assert len(magics.session.agent.model.requests[0]["messages"]) == 1


def test_model_factory_serves_runs_without_script_and_script_still_wins(shell, magics, script, capsys):
    factory_model = ipy_agent.ScriptedModel(["from the factory", "again from the factory"])
    magics.session.model_factory = lambda: factory_model
    shell.run_line_magic("agent", "first question")
    assert "from the factory" in capsys.readouterr().out
    assert magics.session.agent.model is factory_model
    shell.run_line_magic("agent", f"--script {script('from the script')} second question")
    assert "from the script" in capsys.readouterr().out
    shell.run_line_magic("agent", "third question")  # the factory's model goes on where it stopped
    assert "again from the factory" in capsys.readouterr().out
    assert len(factory_model.requests) == 2 and magics.session.view is None  # text output here: no widget view


def test_cell_magic_body_is_the_prompt(shell, magics, script):
    shell.run_cell_magic("agent", f"--script {script('ok')}", "Rename load() to read_table().\nThen run the tests.\n")
    first = magics.session.agent.model.requests[0]["messages"][0]["content"][0]["text"]
    assert first == "Rename load() to read_table().\nThen run the tests."


def test_prompt_keeps_apostrophes_and_rule_values_need_no_quotes(shell, magics, script):
    shell.run_line_magic("agent", f'--allow Bash(git status:*) --script {script("ok")} don\'t touch "it"')
    assert magics.session.agent.model.requests[0]["messages"][0]["content"][0]["text"] == 'don\'t touch "it"'


def test_mode_plan_denies_edits_and_says_why(shell, magics, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", no_input)
    shell.run_line_magic("agent", f"--mode plan --script {edit_script(script, tmp_path)} change it")
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    assert "plan mode" in result_text(results_sent(magics.session.agent.model, 2)["e1"])
    assert magics.session.agent.permission_mode == "plan"


def test_mode_accept_edits_edits_without_asking(shell, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", no_input)
    shell.run_line_magic("agent", f"--mode acceptEdits --script {edit_script(script, tmp_path)} change it")
    assert (tmp_path / "a.txt").read_text() == "howdy\n"


def test_allow_rule_applies_to_its_run_only(shell, magics, script, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", no_input)
    shell.run_line_magic("agent", f"--allow Edit(a.txt) --script {edit_script(script, tmp_path)} change it")
    assert (tmp_path / "a.txt").read_text() == "howdy\n"
    capsys.readouterr()
    shell.run_line_magic("agent_tools", "")
    assert "Edit(a.txt)" not in capsys.readouterr().out


def test_deny_rule_hides_the_tool_from_the_model(shell, magics, script):
    shell.run_line_magic("agent", f"--deny Bash --deny Write --script {script('ok')} hi")
    offered = [t["name"] for t in magics.session.agent.model.requests[0]["tools"]]
    assert "Bash" not in offered and "Write" not in offered and "Read" in offered


def test_max_turns_stops_the_run(shell, magics, script, tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    shell.run_line_magic(
        "agent", f"--max-turns 1 --script {script([use('Read', 'r1', file_path='a.txt')], 'never')} go"
    )
    assert magics.session.last_result.stop_reason == "max_turns"
    assert len(magics.session.agent.model.requests) == 1


def test_model_option_and_missing_key_is_one_clear_line(shell, magics, monkeypatch, capsys):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    shell.run_cell("%agent --model claude-test-model hello")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert any(line.startswith("No Anthropic API key found") for line in captured.out.splitlines())
    assert magics.session.agent.model.name == "claude-test-model"
    assert magics.session.last_result.error_kind == "missing_key"


@pytest.mark.parametrize(
    "line, message",
    [
        ("--mode yolo hi", "invalid choice: 'yolo'"),
        ("--allow 'Bash(' hi", "--allow: permission rule 'Bash(' is not valid"),
        ("--deny '' hi", "--deny: permission rule '' is not valid"),
        ("--script missing.json hi", "transcript 'missing.json' does not exist"),
        ("--max-turns 0 hi", "--max-turns must be at least 1"),
        ("--max-turns many hi", "invalid int value: 'many'"),
        ("--frobnicate hi", "%agent has no option '--frobnicate'"),
        ("--script", "--script needs a value"),
        ("--mode plan", "%agent needs a request"),
        ("--resume nowhere.json", "'nowhere.json' does not exist"),
    ],
)
def test_bad_options_raise_usage_error_with_the_fix(shell, line, message, capsys):
    with pytest.raises(UsageError, match=None) as info:
        shell.run_line_magic("agent", line)
    assert message in str(info.value)
    shell.run_cell(f"%agent {line}")
    err = capsys.readouterr().err
    assert "UsageError" in err and message in err and "Traceback" not in err


def test_malformed_transcript_is_a_usage_error(shell, tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UsageError, match="is not valid JSON"):
        shell.run_line_magic("agent", "--script bad.json hi")


def test_background_without_a_kernel_runs_in_the_foreground(shell, magics, script, capsys):
    shell.run_line_magic("agent", f"--background --script {script('done here')} hi")
    captured = capsys.readouterr()
    assert "done here" in captured.out and "--background needs a kernel" in captured.err
    assert magics.session.last_result.stop_reason == "end_turn"


def test_stop_reset_and_no_conversation_messages(shell, magics, script, capsys):
    shell.run_line_magic("agent_stop", "")
    assert "No agent run is in progress" in capsys.readouterr().out
    with pytest.raises(UsageError, match="No conversation yet"):
        shell.run_line_magic("agent_history", "")
    shell.run_line_magic("agent", f"--script {script('ok')} hi")
    shell.run_line_magic("agent_reset", "")
    assert magics.session.agent.messages == [] and magics.session.agent.trace == []
    assert "Conversation cleared" in capsys.readouterr().out


def test_agent_tasks_lists_background_commands_and_reset_stops_them(shell, magics, script, capsys):
    shell.run_line_magic("agent_tasks", "")
    assert "Nothing runs in the background" in capsys.readouterr().out
    start = [use("Bash", "b1", command="sleep 300", description="Wait a long time", run_in_background=True)]
    shell.run_line_magic("agent", f"--allow Bash(sleep:*) --script {script(start, 'started')} wait")
    capsys.readouterr()
    shell.run_line_magic("agent_tasks", "")
    listing = capsys.readouterr().out
    assert "bash_1" in listing and "running" in listing and "Wait a long time" in listing
    shell.run_line_magic("agent_reset", "")
    capsys.readouterr()
    shell.run_line_magic("agent_tasks", "")
    assert "Nothing runs in the background" in capsys.readouterr().out


def test_subagent_types_come_from_settings(shell, magics, script, tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    shell.run_line_magic(
        "config",
        'AgentMagics.subagents = {"reader": {"description": "reads files", "prompt": "You only read a.txt.", '
        '"tools": ["Read", "Edit"], "permission_mode": "plan"}}',
    )
    turns = [
        [use("Task", "t1", description="read it", prompt="read a.txt", subagent_type="reader")],
        [use("Read", "r1", file_path="a.txt")],
        [use("Edit", "e1", file_path="a.txt", old_string="hello", new_string="bye")],
        "It says hello.",
        "Done.",
    ]
    shell.run_line_magic("agent", f"--mode bypassPermissions --script {script(*turns)} go")
    agent = magics.session.agent
    assert agent.model.requests[1]["system"].startswith("You only read a.txt.")  # the type's prompt
    assert "It says hello." in result_text(results_sent(agent.model, 4)["t1"])
    assert (tmp_path / "a.txt").read_text() == "hello\n"  # plan mode: never looser, whatever the run's mode
    shell.run_line_magic("config", 'AgentMagics.subagents = {"bad": {"tools": []}}')
    with pytest.raises(UsageError, match="subagent type 'bad': 'tools' must be a non-empty list"):
        shell.run_line_magic("agent", f"--script {script('x')} go")


# --- configuration ----------------------------------------------------------------------------


def test_config_magic_sets_the_mode(shell, magics, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", no_input)
    shell.run_line_magic("config", 'AgentMagics.permission_mode = "acceptEdits"')
    assert magics.permission_mode == "acceptEdits"
    shell.run_line_magic("agent", f"--script {edit_script(script, tmp_path)} change it")
    assert (tmp_path / "a.txt").read_text() == "howdy\n"


def test_config_object_like_ipython_config_py(make_shell, script, capsys):
    cfg = Config()
    cfg.AgentMagics.deny = ["Bash"]
    cfg.AgentMagics.max_turns = 3
    cfg.AgentMagics.message_budget = 1234
    shell = make_shell(cfg)
    magics = shell.magics_manager.registry["AgentMagics"]
    assert magics.max_turns == 3
    shell.run_line_magic("agent", f"--script {script('ok')} hi")
    assert magics.session.agent.max_turns == 3 and magics.session.agent.budget.message_limit == 1234
    shell.run_line_magic("agent_tools", "")
    out = capsys.readouterr().out
    assert "Bash: denied by rule 'Bash' (AgentMagics config)" in out


def test_bad_rule_in_config_is_a_usage_error(shell, script):
    shell.run_line_magic("config", "AgentMagics.allow = ['Bash(']")
    with pytest.raises(UsageError, match=r"AgentMagics.allow/ask/deny: permission rule 'Bash\(' is not valid"):
        shell.run_line_magic("agent", f"--script {script('ok')} hi")


def test_invalid_mode_in_config_is_refused(shell):
    shell.run_line_magic("config", 'AgentMagics.permission_mode = "yolo"')
    assert shell.magics_manager.registry["AgentMagics"].permission_mode == "default"


# --- save and resume --------------------------------------------------------------------------


def test_save_and_resume_round_trip(shell, magics, script, tmp_path, monkeypatch, capsys):
    answers = iter(["a"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    shell.run_line_magic("agent", f"--script {edit_script(script, tmp_path)} change it")
    assert (tmp_path / "a.txt").read_text() == "howdy\n"
    shell.run_line_magic("agent_save", "conv.json")
    saved = json.loads((tmp_path / "conv.json").read_text())
    assert saved["granted"] == {"allow": ["Edit(./*.txt)"], "ask": [], "deny": []}
    messages = magics.session.agent.messages

    (tmp_path / "a.txt").write_text("hello\n")
    monkeypatch.setattr("builtins.input", no_input)
    resumed = script(
        [use("Read", "r2", file_path="a.txt")],
        [use("Edit", "e2", file_path="a.txt", old_string="hello", new_string="hi")],
        "again",
    )
    shell.run_line_magic("agent", f"--resume conv.json --script {resumed} do it again")
    agent = magics.session.agent
    assert agent.messages[: len(messages)] == messages
    assert [r.source for r in agent.rules.allow if r.text == "Edit(./*.txt)"] == ["granted"]
    assert (tmp_path / "a.txt").read_text() == "hi\n"  # the granted rule allowed it without a prompt
    assert "Resumed" in capsys.readouterr().out


def test_resume_repairs_an_interrupted_history(shell, magics, tmp_path, capsys):
    broken = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("Read", "x1", file_path="a.txt")]},
    ]
    (tmp_path / "broken.json").write_text(
        json.dumps({"format": "ipy_agent.conversation", "version": 1, "messages": broken, "granted": {}})
    )
    shell.run_line_magic("agent", "--resume broken.json")
    assert history_problems(magics.session.agent.messages) == []
    assert "repaired" in capsys.readouterr().out


def test_save_needs_a_path_and_resume_needs_our_format(shell, script, tmp_path):
    shell.run_line_magic("agent", f"--script {script('ok')} hi")
    with pytest.raises(UsageError, match="needs a file name"):
        shell.run_line_magic("agent_save", "")
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(UsageError, match="not a conversation saved by %agent_save"):
        shell.run_line_magic("agent", "--resume other.json")


# --- views ------------------------------------------------------------------------------------


def _two_reads(shell, script, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\nsecond\n")
    path = script(
        [use("Read", "r1", file_path="a.txt"), use("Read", "r2", file_path="b.txt")],
        [use("Edit", "e1", file_path="a.txt", old_string="alpha", new_string="ALPHA")],
        "done",
    )
    shell.run_line_magic("agent", f"--mode acceptEdits --script {path} read both, then edit")


def test_trace_shows_stages_and_parallel_batch(shell, script, tmp_path, capsys):
    _two_reads(shell, script, tmp_path)
    capsys.readouterr()
    shell.run_line_magic("agent_trace", "1")
    out = capsys.readouterr().out
    assert "Turn 1: 2 call(s) in 1 batch(es)" in out
    assert "permission allow (default: read-only)" in out and "call ok" in out
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("b1 #")]
    assert len(rows) == 2 and all("█" in r for r in rows)
    # Both reads run together: their running spans overlap on the shared time axis.
    spans = [{i for i, c in enumerate(r.split("|")[1]) if c == "█"} for r in rows]
    assert spans[0] & spans[1]
    shell.run_line_magic("agent_trace", "")
    out = capsys.readouterr().out
    assert "Turn 2: 1 call(s)" in out and "b2 #3 Edit" in out and "acceptEdits" in out
    with pytest.raises(UsageError, match="turn 7 made no tool calls"):
        shell.run_line_magic("agent_trace", "7")


def test_inspect_shows_what_the_model_received_beside_the_row(shell, script, tmp_path, capsys):
    _two_reads(shell, script, tmp_path)
    capsys.readouterr()
    shell.run_line_magic("agent_inspect", "r2")
    out = capsys.readouterr().out
    person, model = out.split("The model received")
    assert "✓ Read b.txt — Read 2 lines" in person
    assert "beta" in model and "second" in model
    assert f"Read state: {tmp_path / 'b.txt'}" in out and "recorded by read" in out
    shell.run_line_magic("agent_inspect", "")  # the last call: the edit, with its diff and write
    out = capsys.readouterr().out
    assert "Call #3: Edit" in out and "+ALPHA" in out and "recorded by Edit" in out
    with pytest.raises(UsageError, match="there is no call #9"):
        shell.run_line_magic("agent_inspect", "9")
    with pytest.raises(UsageError, match="no call has tool_use_id 'nope'"):
        shell.run_line_magic("agent_inspect", "nope")


def test_history_is_compact(shell, script, tmp_path, capsys):
    _two_reads(shell, script, tmp_path)
    capsys.readouterr()
    shell.run_line_magic("agent_history", "")
    out = capsys.readouterr().out
    assert "[1] you (prompt 1): read both, then edit" in out  # the number %agent_rewind takes
    assert "agent → Read a.txt  (r1)" in out
    assert "result for r2: ✓ Read 2 lines" in out and "beta" not in out


def test_tools_lists_flags_hidden_reasons_and_rule_sources(shell, tmp_path, capsys):
    from ipy_agent.config.settings_approvals import SettingsApprovals

    SettingsApprovals().remember(tmp_path / ".claude" / "settings.json", ["Bash(git status:*)"])  # approved before
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["NotebookEdit"], "allow": ["Bash(git status:*)"]}})
    )
    shell.run_line_magic("config", "AgentMagics.ask = ['Write']")
    shell.run_line_magic("agent_tools", "")
    out = capsys.readouterr().out
    table = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln.startswith("  ") and len(ln.split()) == 6}
    assert table["Read"] == ["yes", "yes", "yes", "no", "built-in"]
    assert table["Edit"] == ["yes", "no", "no", "no", "built-in"]
    assert re.search(r"^  Bash +yes +per input +per input +per input +built-in$", out, re.M)
    assert "NotebookEdit: denied by rule 'NotebookEdit' (.claude/settings.json)" in out
    assert "allow  Bash(git status:*)  .claude/settings.json" in out
    assert "ask    Write" in out and "AgentMagics config" in out


# --- the kernel paths (awaited cell, background task), driven on a plain loop ----------------


def _slow_tool_script(script, tmp_path):
    (tmp_path / "s.txt").write_text("x\n")
    return script([use("Bash", "b1", command="sleep 30", description="wait")], "never reached")


async def test_awaited_cell_interrupt_ends_promptly_with_valid_history(shell, magics, script, tmp_path):
    path = _slow_tool_script(script, tmp_path)

    async def cell() -> str:
        try:
            await run_agent_cell(f"--allow Bash --script {path} wait")
        except KeyboardInterrupt as e:  # IPython's run_code catches it the same way
            return str(e)
        return "not interrupted"

    task = asyncio.ensure_future(cell())
    for _ in range(200):
        await asyncio.sleep(0.05)
        if magics.session.agent is not None and any(r.status == "running" for r in magics.session.agent.trace):
            break
    task.cancel()  # what ipykernel does on a kernel interrupt
    assert "interrupted" in await asyncio.wait_for(task, timeout=20)
    assert magics.session.last_result.stop_reason == "interrupted"
    assert history_problems(magics.session.agent.messages) == []
    assert not magics.session.agent.running


async def test_awaited_cell_runs_to_the_end(shell, magics, script):
    await asyncio.wait_for(run_agent_cell(f"--script {script('fine')}", "a prompt in the body\n"), timeout=20)
    assert magics.session.last_result.stop_reason == "end_turn"
    assert magics.session.agent.model.requests[0]["messages"][0]["content"][0]["text"] == "a prompt in the body"


async def test_background_run_returns_at_once_and_agent_stop_cancels_it(shell, magics, script, tmp_path, capsys):
    path = _slow_tool_script(script, tmp_path)
    shell.run_line_magic("agent", f"--allow Bash --script {path} wait")  # a loop is running: background
    task = magics.session.background
    assert task is not None and not task.done()
    for _ in range(200):
        await asyncio.sleep(0.05)
        if any(r.status == "running" for r in magics.session.agent.trace):
            break
    shell.run_line_magic("agent_stop", "")
    await asyncio.wait_for(task, timeout=20)
    assert magics.session.last_result.stop_reason == "interrupted"
    assert history_problems(magics.session.agent.messages) == []
    assert "Stopping the agent" in capsys.readouterr().out


async def test_background_crash_is_shown_by_the_done_callback(shell, magics, script, monkeypatch, capsys):
    async def boom(self, prompt):
        raise RuntimeError("boom in the loop")

    monkeypatch.setattr(ipy_agent.Agent, "arun", boom)
    await run_agent_cell(f"--background --script {script('x')} hi")
    with pytest.raises(RuntimeError):
        await magics.session.background
    await asyncio.sleep(0)
    err = capsys.readouterr().err
    assert "The agent crashed" in err and "boom in the loop" in err


def _kernel_shell(make_shell):
    sh = make_shell(load=False)
    sh.kernel = object()  # the magics only ask whether there is a kernel
    sh.run_line_magic("load_ext", "ipy_agent")
    return sh, sh.magics_manager.registry["AgentMagics"]


def test_kernel_widget_prompt_times_out_into_a_denial(make_shell, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", no_input)
    sh, magics = _kernel_shell(make_shell)
    sh.run_line_magic("config", "AgentMagics.approval_timeout = 0.2")
    sh.run_line_magic("agent", f"--script {edit_script(script, tmp_path)} change it")
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    sent = result_text(results_sent(magics.session.agent.model, 2)["e1"])
    assert "No one answered the approval prompt within 0.2 s" in sent and "'Edit(./*.txt)'" in sent


@pytest.mark.parametrize("how", ["--no-widgets", "config", "env"])
def test_kernel_without_widgets_denies_what_rules_do_not_allow(make_shell, script, tmp_path, monkeypatch, capsys, how):
    monkeypatch.setattr("builtins.input", no_input)
    sh, magics = _kernel_shell(make_shell)
    if how == "config":
        sh.run_line_magic("config", "AgentMagics.widgets = False")
    if how == "env":
        monkeypatch.setenv("IPY_AGENT_NONINTERACTIVE", "1")
    sh.run_line_magic(
        "agent", f"{'--no-widgets' if how == '--no-widgets' else ''} --script {edit_script(script, tmp_path)} go"
    )
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    assert "non-interactive run" in result_text(results_sent(magics.session.agent.model, 2)["e1"])
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # colours are on in a kernel
    assert "✓ Read a.txt" in out and "⊘ Edit a.txt — denied" in out  # text rows, not widgets


def test_the_result_limit_override_applies_and_can_be_undone(shell, magics, script, tmp_path):
    (tmp_path / "big.txt").write_text("word\n" * 3000)
    bash = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "cat big.txt"}}
    shell.run_line_magic("config", "AgentMagics.max_result_chars = 1000")
    shell.run_line_magic("agent", f"--script {script([bash], 'ok')} --allow Bash(cat:*) show it")
    first = magics.session.agent.trace[-1].result["content"]
    assert "<persisted-output>" in first
    shell.run_line_magic("config", "AgentMagics.max_result_chars = None")
    bash2 = {**bash, "id": "b2"}
    shell.run_line_magic("agent", f"--script {script([bash2], 'ok')} --allow Bash(cat:*) again")
    assert magics.session.agent.trace[-1].result["content"] == "word\n" * 2999 + "word"


def test_the_result_limit_override_leaves_reads_alone(shell, magics, script, tmp_path):
    (tmp_path / "big.txt").write_text("word\n" * 3000)
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "big.txt"}}
    shell.run_line_magic("config", "AgentMagics.max_result_chars = 1000")
    shell.run_line_magic("agent", f"--script {script([read], 'ok')} read it")
    content = magics.session.agent.trace[-1].result["content"]
    assert "<persisted-output>" not in content and "2000\tword" in content  # Read pages itself


def test_resume_restores_granted_rules_only_as_saved_and_where_they_were_granted(shell, magics, tmp_path, capsys):
    # A file %agent_save wrote: its grants carry the person's signature and come back, never a
    # whole-tool grant.
    shell.run_line_magic("agent", "--new")
    for text in ("Bash(pytest:*)", "Bash", "Bash(*)", "Read(**)", "Edit(//**)", "Edit(src/**)"):
        magics.session.agent.rules.add("allow", text, source="granted")
    shell.run_line_magic("agent_save", "here.json")
    shell.run_line_magic("agent", "--resume here.json")
    out = capsys.readouterr()
    assert [r.text for r in magics.session.agent.rules.allow if r.source == "granted"] == [
        "Bash(pytest:*)",
        "Edit(src/**)",
    ]
    assert "are back: Bash(pytest:*), Edit(src/**)" in out.out
    for everything in ("'Bash' would allow every Bash call", "'Bash(*)' would allow every Bash call"):
        assert everything in out.err
    assert "'Read(**)' would allow every Read call" in out.err and "'Edit(//**)' would allow every Edit" in out.err

    # Written by hand (or by a command: the file sits in the working directory): the
    # conversation comes back, its grants do not, and the person is told why.
    base = {"format": "ipy_agent.conversation", "version": 1, "messages": [{"role": "user", "content": "hi"}]}
    (tmp_path / "by_hand.json").write_text(
        json.dumps({**base, "cwd": str(tmp_path), "granted": {"allow": ["Edit(src/**)"]}})
    )
    shell.run_line_magic("agent", "--resume by_hand.json")
    out = capsys.readouterr()
    assert magics.session.agent.messages == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert [r for r in magics.session.agent.rules.allow if r.source == "granted"] == []
    assert "were not restored: they do not carry the signature" in out.err and "Grant them again" in out.err

    (tmp_path / "there.json").write_text(
        json.dumps({**base, "cwd": "/some/other/project", "granted": {"allow": ["Edit(src/**)"]}})
    )
    shell.run_line_magic("agent", "--resume there.json")
    out = capsys.readouterr()
    assert [r for r in magics.session.agent.rules.allow if r.source == "granted"] == []
    assert "were for '/some/other/project'" in out.err


def test_a_question_mark_at_the_end_of_a_prompt_reaches_the_agent(shell, magics, script, capsys):
    shell.run_cell(f"%agent --script {script('It reads files.')} what does this do?")
    assert (
        magics.session.agent is not None
        and magics.session.agent.messages[0]["content"][0]["text"] == "what does this do?"
    )
    assert "It reads files." in capsys.readouterr().out
    shell.run_cell("%agent?")  # help itself still works
    assert "Run the agent on a request" in capsys.readouterr().out


def test_a_second_agent_while_a_background_run_waits_to_start_is_refused(shell, magics, script):
    import asyncio

    from IPython.core.error import UsageError

    async def both():
        shell.run_line_magic("agent", f"--script {script('first done')} first")  # a loop runs: background
        with pytest.raises(UsageError, match="still running"):
            shell.run_line_magic("agent", f"--script {script('second done')} second")
        await magics.session.background

    asyncio.run(both())
    assert magics.session.agent.messages[-1]["content"][0]["text"] == "first done"


def test_trace_shows_a_call_cancelled_at_its_prompt_as_waiting_not_running(tmp_path):
    import asyncio

    from ipy_agent import Agent, ScriptedModel
    from ipy_agent.ui.inspection import trace_text

    (tmp_path / "a.txt").write_text("x\n")

    async def scenario():
        never = asyncio.get_running_loop().create_future()
        agent = Agent(
            model=ScriptedModel([[use("Write", "w1", file_path="b.txt", content="y")]]),
            cwd=tmp_path,
            approver=lambda req: never,
        )
        task = asyncio.ensure_future(agent.arun("go"))
        while not agent.trace or agent.trace[0].status != "waiting":
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        agent.interrupt()
        await task
        return agent

    agent = asyncio.run(scenario())
    row = next(line for line in trace_text(agent, None).splitlines() if "#1 Write" in line and "|" in line)
    bar = row.split("|")[1]
    assert bar.count("░") > bar.count("█")


def test_agent_rewind_puts_the_file_back_and_says_what_it_did(shell, script, tmp_path, capsys):
    _two_reads(shell, script, tmp_path)
    assert (tmp_path / "a.txt").read_text() == "ALPHA\n"
    capsys.readouterr()
    shell.run_line_magic("agent_rewind", "")
    out = capsys.readouterr().out
    assert (tmp_path / "a.txt").read_text() == "alpha\n"
    assert "Rewound to before prompt 1 (read both, then edit)" in out and "Files restored:\n  - a.txt" in out
    with pytest.raises(UsageError, match="nothing to rewind"):
        shell.run_line_magic("agent_rewind", "")
    with pytest.raises(UsageError, match="'two' is not understood"):
        shell.run_line_magic("agent_rewind", "two")
