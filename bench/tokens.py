"""Tokens as a person pays them: what each request sends and how much of it the cache serves.

The real agent (AnthropicModel through the real SDK, the built-in tools on a scratch project and
an in-process notebook page) runs scripted tasks against a local Messages API that bills every
request with the documented prompt-cache accounting (tests/support/prompt_cache.py): cache
breakpoints, the 20-block lookback, the minimum cacheable length, five-minute lifetimes on a
simulated clock. The script is the model's side; the tool results, the system prompt, the tool
definitions, clearing and compaction are the agent's own.

Sessions:
- `notebook`: 40 model turns of analysis in a notebook over four prompts: reads (one message of
  ten parallel reads among them), cell runs, cell and file edits; old results are cleared as the
  context fills, and the conversation is compacted once before the last prompt.
- `editing`: a 10-turn file-editing task.
- `tool_changes`: a 12-turn session in which the live notebook connects (its tools appear) and
  an MCP server's tool list changes, between prompts.

Run as a child process (the notebook session needs an IPython shell of its own):
`python -m bench.tokens [SESSION] --json` prints one JSON object per session.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipy_agent.context.compaction import COMPACTION_ASK, COMPACTION_SYSTEM
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import claude_cost, price_for
from tests.support.prompt_cache import CachingServer, PromptCache, estimate_tokens
from tests.support.sse_server import Recorded, Reply, message_events
from tests.support.transcript import use

__all__ = ["MODEL", "SessionResult", "run_session"]

MODEL = "claude-sonnet-4-5"
STEP_SECONDS = 20.0  # simulated time from one request to the next (reply, tools)
PROMPT_GAP_SECONDS = 120.0  # the person reads the answer and types the next prompt
NOTEBOOK_WINDOW = 30_000  # a small context window, so that old results are cleared within 40 turns


@dataclass(kw_only=True)
class Turn:
    number: int
    kind: str  # "turn" or "compaction"
    usage: dict[str, Any]
    events: list[str] = field(default_factory=list)  # what happened just before this request
    system_tokens: int = 0
    tools_tokens: int = 0

    @property
    def total(self) -> int:
        u = self.usage
        return int(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"])

    @property
    def share(self) -> float:
        return self.usage["cache_read_input_tokens"] / self.total if self.total else 0.0


@dataclass(kw_only=True)
class SessionResult:
    name: str
    turns: list[Turn]
    errors: list[str]
    prefix: dict[str, Any] = field(default_factory=dict)  # the first request's system and tools, in tokens

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "errors": self.errors,
            "prefix": self.prefix,
            "turns": [
                {
                    "number": t.number,
                    "kind": t.kind,
                    "usage": t.usage,
                    "events": t.events,
                    "system_tokens": t.system_tokens,
                    "tools_tokens": t.tools_tokens,
                }
                for t in self.turns
            ],
        }


def _asks_for_summary(body: dict[str, Any]) -> bool:
    """The in-conversation form of a summary request: the instructions end the last message."""
    content = body["messages"][-1]["content"] if body.get("messages") else ""
    last = content[-1] if isinstance(content, list) and content else {}
    return str(last.get("text", "")).startswith(COMPACTION_ASK)


class ScriptServer(CachingServer):
    """The caching server answering from a script; a compaction request gets a summary, and
    the clock moves on by STEP_SECONDS at every request."""

    def __init__(self) -> None:
        super().__init__(PromptCache())
        self.pending_events: list[str] = []
        self.turns: list[Turn] = []
        self.first: dict[str, Any] | None = None

    def _take(self, recorded: Recorded) -> tuple[int, Reply]:
        body = recorded.body
        system = _system_text(body)
        compaction = system.startswith(COMPACTION_SYSTEM[:60]) or _asks_for_summary(body)
        if compaction:
            with self._lock:
                summary = "Summary: the person is analysing data.csv in analysis.ipynb; " * 20
                self._replies.insert(0, Reply(events=message_events([{"type": "text", "text": summary}])))
        self.cache.advance(STEP_SECONDS)
        number, reply = super()._take(recorded)
        if self.first is None:
            self.first = body
        if self.usages and len(self.usages) == len(self.turns) + 1:
            tools = body.get("tools") or []
            self.turns.append(
                Turn(
                    number=len(self.turns) + 1,
                    kind="compaction" if compaction else "turn",
                    usage=self.usages[-1],
                    events=self.pending_events,
                    system_tokens=sum(estimate_tokens(_bare(b)) for b in _system_blocks(body)),
                    tools_tokens=sum(estimate_tokens(_bare(t)) for t in tools),
                )
            )
            self.pending_events = []
        return number, reply


def _bare(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def _system_blocks(body: dict[str, Any]) -> list[Any]:
    system = body.get("system")
    return [{"type": "text", "text": system}] if isinstance(system, str) else list(system or [])


def _system_text(body: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in _system_blocks(body) if isinstance(b, dict))


# --- the scratch project ---------------------------------------------------------------------------

HELPERS = textwrap.dedent(
    '''\
    """Helpers for the analysis notebook."""

    import csv
    import statistics


    def load(path):
        """The rows of a CSV file, as dicts."""
        with open(path, newline="") as f:
            return list(csv.DictReader(f))


    def by_group(rows, column="value"):
        """Values of `column` grouped by the `group` column."""
        out = {}
        for row in rows:
            out.setdefault(row["group"], []).append(float(row[column]))
        return out


    def summarise(groups):
        """Mean and spread of each group."""
        return {g: (statistics.mean(v), statistics.pstdev(v)) for g, v in groups.items()}
    '''
)

CELLS = [
    ("c1", "markdown", "# Sales analysis\nLoad the data, clean it, summarise by group."),
    ("c2", "code", "import helpers\nrows = helpers.load('data.csv')\nlen(rows)"),
    ("c3", "code", "values = [float(r['value']) for r in rows]\nsum(values) / len(values)"),
    ("c4", "code", "groups = helpers.by_group(rows, column='valu')\nlen(groups)"),
    ("c5", "code", "summary = helpers.summarise(groups)\nsorted(summary.items())[:3]"),
    ("c6", "code", "outliers = [v for v in values if v > 900]\nlen(outliers)"),
    ("c7", "markdown", "## Notes\nGroups with fewer than 10 rows are noisy."),
]


def make_project(root: Path) -> None:
    (root / "helpers.py").write_text(HELPERS)
    lines = ["id,group,value,region,comment"]
    for i in range(2_000):
        lines.append(f"{i},g{i % 17},{(i * 7919) % 1000}.{i % 10},r{i % 5},row {i} of the monthly export")
    (root / "data.csv").write_text("\n".join(lines) + "\n")
    for i in range(10):
        (root / f"report_{i}.md").write_text(f"# Report {i}\n" + f"Quarter {i} sales were steady. " * 120 + "\n")
    (root / "README.md").write_text("# Sales\nMonthly exports in data.csv; the analysis in analysis.ipynb.\n")
    nb = {
        "cells": [
            {"id": cid, "cell_type": kind, "source": src, "metadata": {}}
            | ({"outputs": [], "execution_count": None} if kind == "code" else {})
            for cid, kind, src in CELLS
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "analysis.ipynb").write_text(json.dumps(nb, indent=1))


def _panel() -> Any:
    from tests.support.frontend import Panel, cell

    return Panel(path="analysis.ipynb", cells=[cell(src, kind, cell_id=cid) for cid, kind, src in CELLS])


# --- the scripts: one list of assistant messages per prompt -------------------------------------------


class Script:
    def __init__(self) -> None:
        self.n = 0

    def calls(self, text: str, *uses: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for name, inp in uses:
            self.n += 1
            blocks.append(use(name, f"toolu_{self.n:03d}", **inp))
        return blocks


def notebook_prompts(s: Script) -> list[tuple[str, list[list[dict[str, Any]]]]]:
    nb = {"notebook_path": "analysis.ipynb"}
    return [
        (
            "Look at analysis.ipynb and the data and tell me what it does and whether it works.",
            [
                s.calls("Let me read the notebook.", ("NotebookRead", nb)),
                s.calls("And the helpers it imports.", ("Read", {"file_path": "helpers.py"})),
                s.calls("A look at the data.", ("Read", {"file_path": "data.csv", "limit": 300})),
                s.calls("What the kernel holds now.", ("Variables", {})),
                s.calls("Running the first cells.", ("NotebookRun", {"cell_id": "c2"})),
                s.calls("Next.", ("NotebookRun", {"cell_id": "c3"})),
                s.calls("Next.", ("NotebookRun", {"cell_id": "c4"})),
                s.calls(
                    "Reading the reports together.",
                    *(("Read", {"file_path": f"report_{i}.md"}) for i in range(10)),
                ),
                s.calls("Where else the column is named.", ("Grep", {"pattern": "valu", "output_mode": "content"})),
                [{"type": "text", "text": "The notebook loads data.csv, averages it, and fails in c4: column 'valu'."}],
            ],
        ),
        (
            "Fix c4 and run the rest.",
            [
                s.calls(
                    "Fixing the column name.",
                    ("NotebookEdit", {**nb, "cell_id": "c4", "new_source": CELLS[3][2].replace("valu'", "value'")}),
                ),
                s.calls("Running it.", ("NotebookRun", {"cell_id": "c4"})),
                s.calls("Then the summary.", ("NotebookRun", {"cell_id": "c5"})),
                s.calls("And the outliers.", ("NotebookRun", {"cell_id": "c6"})),
                s.calls(
                    "Checking the data's other columns.",
                    ("Read", {"file_path": "data.csv", "offset": 300, "limit": 300}),
                ),
                s.calls("Variables after the run.", ("Variables", {"names": ["summary", "outliers"]})),
                s.calls("Re-reading the notebook.", ("NotebookRead", nb)),
                s.calls("Files around.", ("Glob", {"pattern": "*.md"})),
                s.calls(
                    "One more look at the helpers.",
                    ("Grep", {"pattern": "def ", "path": "helpers.py", "output_mode": "content"}),
                ),
                [{"type": "text", "text": "c4 works now; 17 groups, summary and outliers computed."}],
            ],
        ),
        (
            "Make by_group skip rows whose value is empty, and add a cell that counts rows per region.",
            [
                s.calls("Reading helpers again.", ("Read", {"file_path": "helpers.py"})),
                s.calls(
                    "Editing by_group.",
                    (
                        "Edit",
                        {
                            "file_path": "helpers.py",
                            "old_string": '        out.setdefault(row["group"], []).append(float(row[column]))',
                            "new_string": '        if row[column]:\n            out.setdefault(row["group"], []).append(float(row[column]))',
                        },
                    ),
                ),
                s.calls(
                    "Adding the region cell.",
                    (
                        "NotebookEdit",
                        {
                            **nb,
                            "cell_id": "c6",
                            "edit_mode": "insert",
                            "cell_type": "code",
                            "new_source": "from collections import Counter\nCounter(r['region'] for r in rows)",
                        },
                    ),
                ),
                s.calls("Reading it back.", ("NotebookRead", nb)),
                s.calls("More of the data.", ("Read", {"file_path": "data.csv", "offset": 600, "limit": 400})),
                s.calls("Rerunning the load.", ("NotebookRun", {"cell_id": "c2"})),
                s.calls("And the groups.", ("NotebookRun", {"cell_id": "c4"})),
                s.calls(
                    "Reading the end of the data.", ("Read", {"file_path": "data.csv", "offset": 1000, "limit": 400})
                ),
                s.calls("Checking the README.", ("Read", {"file_path": "README.md"})),
                [{"type": "text", "text": "by_group skips empty values; the new cell counts rows per region."}],
            ],
        ),
        (
            "Summarise what changed and check everything still runs.",
            [
                s.calls("Reading the notebook.", ("NotebookRead", nb)),
                s.calls("Running c2.", ("NotebookRun", {"cell_id": "c2"})),
                s.calls("Running c3.", ("NotebookRun", {"cell_id": "c3"})),
                s.calls("Running c4.", ("NotebookRun", {"cell_id": "c4"})),
                s.calls("Running c5.", ("NotebookRun", {"cell_id": "c5"})),
                s.calls("Variables.", ("Variables", {})),
                s.calls("The helpers as they are.", ("Read", {"file_path": "helpers.py"})),
                s.calls("Any leftover typo.", ("Grep", {"pattern": "valu'", "output_mode": "content"})),
                s.calls("The rest of the data.", ("Read", {"file_path": "data.csv", "offset": 1400, "limit": 400})),
                [
                    {
                        "type": "text",
                        "text": "Everything runs: c4 fixed, by_group skips empty values, a region count added.",
                    }
                ],
            ],
        ),
    ]


def editing_prompts(
    s: Script, root: Path, *, bash_search: bool = False
) -> list[tuple[str, list[list[dict[str, Any]]]]]:
    """The 10-turn editing task, absolute paths as both agents accept them; `bash_search`: Glob
    and Grep as the shell commands Claude Code runs for them."""
    helpers, test = str(root / "helpers.py"), str(root / "test_helpers.py")

    def glob(pattern: str) -> tuple[str, dict[str, Any]]:
        return ("Bash", {"command": f"ls {pattern}"}) if bash_search else ("Glob", {"pattern": pattern})

    def grep(pattern: str, files: bool = False) -> tuple[str, dict[str, Any]]:
        if bash_search:
            return ("Bash", {"command": f"grep -rn{'l' if files else ''} '{pattern}' ."})
        return ("Grep", {"pattern": pattern, "output_mode": "files_with_matches" if files else "content"})

    return [
        (
            "Add a median to summarise in helpers.py and a test for it in test_helpers.py.",
            [
                s.calls("Reading the module.", ("Read", {"file_path": helpers})),
                s.calls("Any tests yet?", glob("test_*.py")),
                s.calls("Where summarise is used.", grep("summarise")),
                s.calls(
                    "Adding the median.",
                    (
                        "Edit",
                        {
                            "file_path": helpers,
                            "old_string": "(statistics.mean(v), statistics.pstdev(v))",
                            "new_string": "(statistics.mean(v), statistics.median(v), statistics.pstdev(v))",
                        },
                    ),
                ),
                s.calls(
                    "Updating the docstring.",
                    (
                        "Edit",
                        {
                            "file_path": helpers,
                            "old_string": '"""Mean and spread of each group."""',
                            "new_string": '"""Mean, median and spread of each group."""',
                        },
                    ),
                ),
                s.calls(
                    "Writing the test.",
                    (
                        "Write",
                        {
                            "file_path": test,
                            "content": "import helpers\n\n\ndef test_median():\n"
                            "    assert helpers.summarise({'a': [1.0, 2.0, 9.0]})['a'][1] == 2.0\n",
                        },
                    ),
                ),
                s.calls("Reading it back.", ("Read", {"file_path": test})),
                s.calls("Checking the module once more.", ("Read", {"file_path": helpers})),
                s.calls("Other callers.", grep("helpers\\.", files=True)),
                [
                    {
                        "type": "text",
                        "text": "summarise returns (mean, median, pstdev); test_helpers.py checks the median.",
                    }
                ],
            ],
        )
    ]


def change_prompts(s: Script) -> list[tuple[str, list[list[dict[str, Any]]]]]:
    def four(label: str) -> list[list[dict[str, Any]]]:
        return [
            s.calls(f"{label}: reading.", ("Read", {"file_path": "helpers.py"})),
            s.calls(f"{label}: searching.", ("Grep", {"pattern": "def ", "output_mode": "content"})),
            s.calls(f"{label}: the data.", ("Read", {"file_path": "data.csv", "limit": 100})),
            [{"type": "text", "text": f"{label}: done."}],
        ]

    return [
        ("Before the notebook connects.", four("one")),
        ("With the notebook.", four("two")),
        ("With MCP.", four("three")),
    ]


# --- running a session ------------------------------------------------------------------------------


def _mcp_tool() -> Any:
    from pydantic import BaseModel, ConfigDict, Field

    from ipy_agent import build_tool

    class QueryInput(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sql: str = Field(description="A read-only SQL query.")

    async def call(inp: QueryInput, ctx: Any) -> str:
        return "no rows"

    return build_tool(
        name="mcp__warehouse__query",
        input_model=QueryInput,
        description="Run a read-only SQL query against the sales warehouse (an MCP server's tool).",
        call=call,
        is_read_only=True,
    )


def _text_of(result: object) -> str:
    """A tool_result block's text as the model reads it (quotes unescaped), else its str."""
    content = result.get("content") if isinstance(result, dict) else None
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content if isinstance(content, str) else result)


async def _run(name: str, root: Path, server: ScriptServer, *, window: int | None) -> list[str]:
    from IPython.core.interactiveshell import InteractiveShell

    from ipy_agent import Agent
    from ipy_agent.models.anthropic import AnthropicModel
    from ipy_agent.runtime.trace import ContextEvent
    from tests.support.frontend import connected_bridge

    script = Script()
    if name == "editing":
        prompts = editing_prompts(script, root)
    else:
        prompts = {"notebook": notebook_prompts, "tool_changes": change_prompts}[name](script)
    shell = InteractiveShell.instance()
    bridge = connected_bridge(_panel(), root, shell=shell)
    model = AnthropicModel(MODEL, api_key="bench", base_url=server.url, max_retries=0)
    agent = Agent(
        model=model,
        cwd=root,
        approver=lambda req: "allow",
        notebook=bridge if name == "notebook" else None,
        context_window=window,
        instructions=False,
    )

    def on_event(event: Any) -> None:
        if isinstance(event, ContextEvent):
            server.pending_events.append(event.action)

    agent.on_event(on_event)
    errors: list[str] = []
    for i, (prompt, replies) in enumerate(prompts):
        if name == "tool_changes" and i == 1:
            agent.configure(notebook=bridge)
            server.pending_events.append("live tools connected")
        if name == "tool_changes" and i == 2:
            agent.registry.set_group("mcp", [_mcp_tool()])
            server.pending_events.append("MCP tools changed")
        if name == "notebook" and i == 3:
            server.pending_events.append("compaction")
            await agent.context_manager.compact(trigger="manual")
        server.add(*(message_events(r) for r in replies))
        server.cache.advance(PROMPT_GAP_SECONDS)
        result = await agent.arun(prompt)
        if result.stop_reason != "end_turn":
            errors.append(f"prompt {i + 1}: {result.stop_reason} {result.error}")
    errors += [f"{c.tool_name}: {c.status} {_text_of(c.result)[:400]}" for c in agent.trace if c.status != "done"]
    await model.aclose()
    return errors


def run_session(name: str, *, window: int | None = None) -> SessionResult:
    with tempfile.TemporaryDirectory(prefix="ipy_agent_tokens_") as tmp, ScriptServer() as server:
        root = Path(tmp)
        make_project(root)
        here = os.getcwd()
        os.chdir(root)  # where the notebook's cells run and import from
        sys.path.insert(0, str(root))
        try:
            errors = asyncio.run(_run(name, root, server, window=window))
        finally:
            os.chdir(here)
            sys.path.remove(str(root))
        return SessionResult(name=name, turns=server.turns, errors=errors, prefix=prefix_of(server.first or {}))


def prefix_of(body: dict[str, Any]) -> dict[str, Any]:
    """Tokens of the system prompt and of each tool definition in a request `body`."""
    return {
        "system": sum(estimate_tokens(_bare(b)) for b in _system_blocks(body)),
        "tools": {str(t.get("name")): estimate_tokens(_bare(t)) for t in body.get("tools") or []},
    }


def _turns_of(usages: list[dict[str, Any]], bodies: list[dict[str, Any]]) -> list[Turn]:
    return [
        Turn(
            number=i + 1,
            kind="turn",
            usage=u,
            system_tokens=prefix_of(b)["system"],
            tools_tokens=sum(prefix_of(b)["tools"].values()),
        )
        for i, (u, b) in enumerate(zip(usages, bodies, strict=True))
    ]


def run_claude_code_editing() -> SessionResult | None:
    """Claude Code on the editing task, or None when it is not installed."""
    from bench.claude_code import binary, run_claude_code

    exe = binary()
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="ipy_agent_tokens_") as tmp:
        root = Path(tmp).resolve()
        make_project(root)
        ((prompt, replies),) = editing_prompts(Script(), root, bash_search=True)
        usages, bodies = run_claude_code(exe, root, prompt, replies, model=MODEL)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    errors = [] if len(usages) == len(replies) else [f"{len(usages)} requests for {len(replies)} replies"]
    return SessionResult(
        name=f"claude_code {version}", turns=_turns_of(usages, bodies), errors=errors, prefix=prefix_of(bodies[0])
    )


def _latest_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The breakpoint placement before the second breakpoint: the latest message only."""
    from ipy_agent.models import anthropic

    if not messages:
        return list(messages)
    return [*messages[:-1], anthropic._with_breakpoint(messages[-1])]


# --- what the rows report ---------------------------------------------------------------------------


def breaks(turns: list[Turn]) -> list[Turn]:
    """Turns that did not read all that the turn before them had cached (compaction requests,
    a prefix of their own, are left out on both sides)."""
    out, before = [], None
    for t in turns:
        if t.kind != "turn":
            continue
        if before is not None:
            cached_before = before.usage["cache_read_input_tokens"] + before.usage["cache_creation_input_tokens"]
            if t.usage["cache_read_input_tokens"] < cached_before:
                out.append(t)
        before = t
    return out


def cost(turns: list[Turn], *, cached: bool) -> float:
    """USD at list prices for the input side of `turns`; `cached=False`: the same tokens with no cache."""
    usage = Usage()
    for t in turns:
        if cached:
            usage += Usage(
                input_tokens=t.usage["input_tokens"],
                cache_read_input_tokens=t.usage["cache_read_input_tokens"],
                cache_creation_input_tokens=t.usage["cache_creation_input_tokens"],
            )
        else:
            usage += Usage(input_tokens=t.total)
    return claude_cost(MODEL, usage).usd


def input_price() -> float:
    return price_for(MODEL).input


SESSIONS = ("notebook", "notebook_latest_only", "editing", "tool_changes", "claude_code")


def main(argv: list[str]) -> None:
    """One JSON line per session named in `argv` (default: all of SESSIONS)."""
    from ipy_agent.models import anthropic

    for name in [a for a in argv if not a.startswith("--")] or SESSIONS:
        if name == "claude_code":
            result = run_claude_code_editing()
            if result is None:
                continue
        elif name == "notebook_latest_only":
            placed = anthropic._messages_with_breakpoint
            anthropic._messages_with_breakpoint = _latest_only  # type: ignore[assignment]
            try:
                result = run_session("notebook", window=NOTEBOOK_WINDOW)
            finally:
                anthropic._messages_with_breakpoint = placed  # type: ignore[assignment]
            result.name = name
        else:
            result = run_session(name, window=NOTEBOOK_WINDOW if name == "notebook" else None)
        print(json.dumps(result.as_json()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])


# --- the rows `python -m bench` reports (from the sessions' JSON, in the parent process) ---------


def _turns(data: dict[str, Any]) -> list[Turn]:
    return [
        Turn(
            number=t["number"],
            kind=t["kind"],
            usage=t["usage"],
            events=t["events"],
            system_tokens=t["system_tokens"],
            tools_tokens=t["tools_tokens"],
        )
        for t in data["turns"]
    ]


def steady(turns: list[Turn]) -> list[Turn]:
    """Model turns from the third on that follow no event (clearing, compaction, a tool change)."""
    model_turns = [t for t in turns if t.kind == "turn"]
    return [t for t in model_turns[2:] if not t.events]


def share_of(turns: list[Turn]) -> float:
    """Cached share of all input tokens of `turns` (weighted by tokens)."""
    total = sum(t.total for t in turns)
    return sum(t.usage["cache_read_input_tokens"] for t in turns) / total if total else 0.0


def shared_prefix(ours: dict[str, Any], peer: dict[str, Any]) -> tuple[int, int, list[str]]:
    """Tokens of the system prompt plus the definitions of the tools both offer: ours, the peer's."""
    both = sorted(set(ours["tools"]) & set(peer["tools"]))
    return (
        ours["system"] + sum(ours["tools"][n] for n in both),
        peer["system"] + sum(peer["tools"][n] for n in both),
        both,
    )
