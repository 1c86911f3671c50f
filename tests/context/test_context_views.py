"""What the person sees of context management: a row when the context was cleared or compacted
(widgets and text), `%agent_context` and `%agent_compact`."""

from __future__ import annotations

import io
import re

from rich.console import Console

from ipy_agent import Agent, ScriptedModel
from ipy_agent.context.compaction import SUMMARY_HEADER
from ipy_agent.history.messages import history_problems
from ipy_agent.runtime.trace import ContextEvent
from ipy_agent.ui.text import TextRenderer
from ipy_agent.ui.widgets import RunView
from tests.support.context import fetch, fetch_tool


def long_agent(tmp_path, turns: int = 100) -> Agent:
    model = ScriptedModel([[fetch(i)] for i in range(turns)] + ["done"])
    return Agent(model, cwd=tmp_path, tools=[fetch_tool(6_000)], context_window=12_000, max_turns=turns + 5)


def test_the_widget_view_shows_a_row_for_clearing_and_for_compaction(tmp_path):
    agent = long_agent(tmp_path)
    view = RunView(agent)
    agent.on_event(view.listener)
    agent.run("go")
    rows = [w.value for w in view.body.children if "ipy-agent-context" in getattr(w, "value", "")]
    assert any(re.search(r"context: \d+ old tool results? cleared: [\d.]+k -&gt; [\d.]+k tokens", r) for r in rows)
    assert any(
        re.search(r"context compacted: [\d.]+k -&gt; [\d.]+k tokens \(\d+ earlier messages summarised\)", r)
        for r in rows
    )
    assert "of 12k" in view.footer.value  # the footer's context share uses the agent's window


def test_the_text_renderer_prints_the_same_rows(tmp_path):
    out = io.StringIO()
    renderer = TextRenderer(Console(file=out, force_terminal=False, width=200))
    agent = long_agent(tmp_path)
    agent.on_event(renderer)
    agent.run("go")
    text = out.getvalue()
    assert re.search(r"⇣ context: \d+ old tool results? cleared: [\d.]+k -> [\d.]+k tokens", text)
    assert re.search(r"⇣ context compacted: [\d.]+k -> [\d.]+k tokens", text)


def test_event_text_reads_as_in_the_issue():
    e = ContextEvent(action="compacted", before=143_200, after=31_400, count=88)
    assert e.text == "context compacted: 143k -> 31k tokens (88 earlier messages summarised)"
    assert (
        ContextEvent(action="cleared", before=9_500, after=4_200, count=1).text
        == "context: 1 old tool result cleared: 9.5k -> 4.2k tokens"
    )


def test_agent_context_magic_shows_what_fills_the_window(shell, magics, capsys, tmp_path):
    agent = Agent(
        ScriptedModel([[fetch(i)] for i in range(6)] + ["done"]),
        cwd=tmp_path,
        tools=[fetch_tool(6_000)],
        context_window=20_000,
        max_turns=10,
    )
    magics.session.agent = agent
    agent.run("go")
    capsys.readouterr()
    shell.run_line_magic("agent_context", "")
    out = capsys.readouterr().out

    assert "Context window: 20,000 tokens (set with context_window=)" in out
    used = int(re.search(r"the next request takes about ([\d,]+) \((\d+)%\)", out).group(1).replace(",", ""))
    bar = re.search(r"\[([stmrc·|]+)\]", out).group(1)
    assert len(bar) == 60 and bar[48] == "|"  # the threshold at 80%
    assert bar.count("r") >= 1 and bar.count("t") >= 0
    rows = dict(
        re.findall(
            r"^\s+\S\s+(system prompt|tool definitions|messages|tool results|cleared-result notes|free)\s+([\d,]+)",
            out,
            flags=re.M,
        )
    )
    assert set(rows) == {
        "system prompt",
        "tool definitions",
        "messages",
        "tool results",
        "cleared-result notes",
        "free",
    }
    parts = {k: int(v.replace(",", "")) for k, v in rows.items()}
    assert sum(v for k, v in parts.items() if k != "free") == used
    assert parts["tool results"] > parts["messages"]  # six 6 KB results dominate
    assert parts["free"] == 20_000 - used


def test_agent_compact_magic_compacts_with_instructions(shell, magics, capsys, tmp_path):
    model = ScriptedModel(["first answer", "second answer"])
    agent = Agent(model, cwd=tmp_path)
    magics.session.agent = agent
    agent.run("first question")
    agent.run("second question")
    capsys.readouterr()
    shell.run_line_magic("agent_compact", "keep the open questions")
    out = capsys.readouterr().out

    assert re.search(r"Context compacted: [\d.k]+ -> [\d.k]+ tokens \(3 earlier messages summarised\)\.", out)
    assert agent.messages[0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert agent.messages[1]["content"][0]["text"] == "second answer"
    assert history_problems(agent.messages) == []
    assert "Also: keep the open questions" in model.compactions[0]["messages"][-1]["content"][-1]["text"]
    shell.run_line_magic("agent_compact", "")
    assert "Not compacted: there are no earlier turns to summarise." in capsys.readouterr().out


def test_the_window_is_configurable_for_the_magics(shell, magics, tmp_path, capsys):
    transcript = tmp_path / "t.json"
    transcript.write_text('{"turns": ["hi"]}')
    shell.run_line_magic("config", "AgentMagics.context_window = 30000")
    shell.run_line_magic("agent", f"--script {transcript} hello")
    assert magics.session.agent.context_manager.window == 30_000
    shell.run_line_magic("agent_context", "")
    assert "Context window: 30,000 tokens (set with context_window=)" in capsys.readouterr().out


def test_agent_reset_starts_the_accounting_afresh(shell, magics, capsys, tmp_path):
    agent = long_agent(tmp_path, turns=30)
    magics.session.agent = agent
    agent.run("go")
    assert agent.context_manager.cleared > 0
    shell.run_line_magic("agent_reset", "")
    agent.model = ScriptedModel(["fresh"])
    agent.run("hello again")
    capsys.readouterr()
    shell.run_line_magic("agent_context", "")
    out = capsys.readouterr().out
    assert "2 messages; 0 tool results cleared and 0 compactions so far" in out
