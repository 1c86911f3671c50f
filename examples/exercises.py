"""The checks of the course's exercises: each runs the learner's code through the real runtime.

A notebook imports this module in its first cell (`import exercises`; the notebooks run from
examples/). Each exercise gives starting code to change, then a check cell:

    exercises.check_tool_flags(files_tool)

A check never raises on a wrong answer: it returns a `Report` that lists, in plain words, what is
right (✓) and what is not yet (✗, with a hint), and shows as such in the notebook. `report.passed`
is True when every point holds. Each check builds a fresh scratch project and runs the learner's
tool, hook, rule or prediction through the same `Agent`, lifecycle and decision the notebook
showed, with a `ScriptedModel` (offline, no key). tests/examples/test_exercises.py runs every check
against the notebook's solution (passes) and its unchanged starting code (fails, with a hint).
"""

from __future__ import annotations

import asyncio
import html
import tempfile
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool

__all__ = [
    "Report",
    "check_annotations",
    "check_batches",
    "check_classifier_prediction",
    "check_context_window",
    "check_delegation_prediction",
    "check_deny_hook",
    "check_hidden_state_prediction",
    "check_never_run",
    "check_offered_tools",
    "check_read_first",
    "check_rewind_prediction",
    "check_rules",
    "check_skill",
    "check_spill_budget",
    "check_tool_flags",
    "check_tour_prediction",
    "check_variables_prediction",
]


@dataclass
class Report:
    """The outcome of one check: (passed, words) per point."""

    title: str
    points: list[tuple[bool, str]] = field(default_factory=list)

    def ok(self, condition: bool, right: str, wrong: str) -> bool:
        self.points.append((bool(condition), right if condition else wrong))
        return bool(condition)

    @property
    def passed(self) -> bool:
        return bool(self.points) and all(ok for ok, _ in self.points)

    @property
    def problems(self) -> list[str]:
        return [words for ok, words in self.points if not ok]

    def summary(self) -> str:
        if self.passed:
            return f"{self.title}: all {len(self.points)} checks pass. Well done."
        return f"{self.title}: not yet ({len(self.problems)} of {len(self.points)} checks to fix)."

    def __repr__(self) -> str:
        lines = [self.summary()] + [f"  {'✓' if ok else '✗'} {words}" for ok, words in self.points]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = "#2ea043" if self.passed else "#d08700"
        items = "".join(
            f'<li style="list-style:none"><b style="color:{"#2ea043" if ok else "#cf222e"}">{"✓" if ok else "✗"}</b> '
            f"{html.escape(words)}</li>"
            for ok, words in self.points
        )
        return (
            f'<div class="exercise-check" style="border-left:4px solid {colour};padding-left:0.6em">'
            f"<b>{html.escape(self.summary())}</b><ul style='padding-left:0.4em'>{items}</ul></div>"
        )


def _scratch(files: dict[str, str]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="ipy-agent-exercise-"))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _run_async(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to its end from a notebook cell (whose loop is running) or plain code."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _use(tool_use_id: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": inp}


def _crashed(report: Report, what: str, error: BaseException) -> Report:
    report.ok(False, "", f"{what} raised {type(error).__name__}: {error}")
    return report


# --- 01 · the tour ----------------------------------------------------------------------------


def check_tour_prediction(asked: set[str], same_batch: set[str]) -> Report:
    """01: which of the tour's calls (Glob, Read, Edit) asked the person, and which shared a batch."""
    report = Report("Predicting the tour")
    asked_for: list[str] = []
    work = _scratch({"notes.txt": "Meeting notes\nWe agreed on teh plan.\nNext meeting: Tuesday.\n", "todo.txt": "x\n"})
    transcript = Path(__file__).resolve().parent / "transcripts" / "tour.json"
    agent = Agent(
        model=ScriptedModel.from_file(transcript),
        cwd=work,
        approver=lambda req: asked_for.append(req.tool_name) or "allow",
    )
    agent.run("fix the typo in notes.txt")
    real_asked = set(asked_for)
    batches: dict[int, set[str]] = {}
    for r in agent.trace:
        batches.setdefault(r.batch, set()).add(r.tool_name)
    shared = set().union(*(b for b in batches.values() if len(b) > 1))
    asked = {str(x) for x in asked}
    report.ok(
        asked == real_asked,
        f"asked the person: {sorted(real_asked)}",
        f"you said {sorted(asked)} asked the person; it was {sorted(real_asked)}. Hint: a tool that only "
        "reads runs at once; one that can change a file asks, unless a rule or mode allows it.",
    )
    same = {str(x) for x in same_batch}
    report.ok(
        same == shared,
        f"ran together in one batch: {sorted(shared)}",
        f"you said {sorted(same)} shared a batch; it was {sorted(shared)}. Hint: calls of one message run "
        "together only when every one of them is concurrency-safe.",
    )
    return report


# --- 02 · the tool contract -------------------------------------------------------------------


def check_tool_flags(tool: Any) -> Report:
    """02: a `Files` tool whose flags follow its input: list is read-only and parallel, delete is destructive."""
    report = Report("Flags that depend on the input")
    try:
        listing = tool.input_model(action="list", path="data")
        deleting = tool.input_model(action="delete", path="data/old.csv")
    except Exception as e:
        return _crashed(report, "Making inputs {'action': 'list'} and {'action': 'delete'} for your tool", e)
    report.ok(
        tool.is_read_only(listing),
        "list is read-only (it runs without asking)",
        "list is not read-only, so every listing asks the person. Declare is_read_only as a function of "
        "the input: lambda inp: inp.action == 'list'.",
    )
    report.ok(
        tool.is_concurrency_safe(listing),
        "list is concurrency-safe (listings run together)",
        "list is not concurrency-safe, so two listings run one after the other. Set is_concurrency_safe too.",
    )
    report.ok(
        not tool.is_read_only(deleting),
        "delete is not read-only (it asks)",
        "delete is declared read-only: it would run without anyone approving it.",
    )
    report.ok(
        tool.is_destructive(deleting),
        "delete is destructive (the prompt warns)",
        "delete is not marked destructive, so the approval prompt gives no warning. Set is_destructive "
        "as a function of the input.",
    )
    report.ok(
        not tool.is_destructive(listing),
        "list is not destructive",
        "list is marked destructive: the person would be warned about a harmless listing.",
    )
    return report


# --- 03 · registry and permissions ------------------------------------------------------------

RULE_CASES = [
    ("git status", True),
    ("git diff --stat", True),
    ("git push --force origin main", False),
    ("git status && rm -rf build", False),
    ("git reset --hard HEAD~3", False),
]


def check_rules(allow: list[str], deny: list[str]) -> Report:
    """03: rules that let `git status` and `git diff` through without asking, and nothing that changes the repository."""
    from ipy_agent.permissions.decide import decide

    report = Report("A rule and its dangerous neighbour")
    try:
        agent = Agent(model=ScriptedModel([]), cwd=_scratch({}), allow=list(allow), deny=list(deny))
    except Exception as e:
        return _crashed(report, "Agent(allow=ALLOW, deny=DENY)", e)
    bash = agent.registry.get("Bash")
    ctx = agent.tool_context()

    async def decision(command: str) -> Any:
        inp = bash.input_model(command=command)
        check = await bash.check_permissions(inp, ctx)
        return decide(
            tool=bash, inp=inp, ctx=ctx, rules=agent.rules, mode="default", tool_check=check, hook_decision=None
        )

    for command, should_run in RULE_CASES:
        d = _run_async(lambda command=command: decision(command))
        runs = d.behavior == "allow"
        if should_run:
            report.ok(
                runs,
                f"{command!r} runs without asking ({d.reason})",
                f"{command!r} still asks ({d.reason}). Add an allow rule for it, such as 'Bash(git status:*)'.",
            )
        else:
            report.ok(
                not runs,
                f"{command!r} does not run unasked ({d.behavior}: {d.reason})",
                f"{command!r} would run without asking ({d.reason}). That rule is too broad: allow the "
                "commands themselves ('Bash(git status:*)'), not every git command.",
            )
    return report


# --- 04 · lifecycle and hooks -----------------------------------------------------------------


def check_deny_hook(hook: Callable[[Any], Any]) -> Report:
    """04: a PreToolUse hook on Bash that blocks `curl` and `wget`, and lets other commands through."""
    report = Report("A hook that denies a call")
    work = _scratch({"notes.txt": "hello\n"})
    turns = [
        [
            _use("toolu_fetch", "Bash", command="curl -s https://example.com/data.csv -o data.csv"),
            _use("toolu_wget", "Bash", command="wget -q https://example.com/data.csv"),
            _use("toolu_touch", "Bash", command="touch notes.txt"),
        ],
        "Done.",
    ]
    # The person (this check) says no to whatever reaches them: nothing runs, whatever the hook does.
    asked: list[str] = []
    agent = Agent(model=ScriptedModel(turns), cwd=work, approver=lambda req: asked.append(req.tool_use_id) or "deny")
    agent.hooks.add("PreToolUse", hook, matcher="Bash")
    agent.run("fetch the data")
    by_id = {r.tool_use_id: r for r in agent.trace}
    for tid, word in (("toolu_fetch", "curl"), ("toolu_wget", "wget")):
        r = by_id[tid]
        blocked = r.decision is not None and r.decision.behavior == "deny" and r.decision.source == "hook"
        content = str(r.result["content"])
        who = "it went on to the person's approval" if tid in asked else f"the model got {content[:120]!r}"
        if not report.ok(
            blocked,
            f"the {word} call was blocked by your hook: {content[:90]!r}",
            f"the {word} call was not blocked by the hook ({who}). Return "
            "HookOutcome(decision='deny', reason=...) when the command starts with curl or wget.",
        ):
            continue
        report.ok(
            "raised" not in content and len(content) > len("A PreToolUse hook blocked this Bash call: ") + 5,
            "the model was told why, so it can do something else",
            f"the model got {content!r}: give a reason it can act on (reason='no network: use the files in data/').",
        )
    touch = by_id["toolu_touch"]
    report.ok(
        "toolu_touch" in asked,
        "'touch notes.txt' passed your hook and went on to the person's approval",
        f"'touch notes.txt' never reached the person ({str(touch.result['content'])[:120]!r}). Return None for "
        "commands the hook has no objection to.",
    )
    return report


# --- 05 · concurrency -------------------------------------------------------------------------


class _KeyInput(BaseModel):
    key: str


class _TextInput(BaseModel):
    text: str


BATCH_CALLS = ["Lookup a", "Lookup b", "Note x", "Note y", "Lookup c", "Lookup d", "Note z", "Lookup e"]


def check_batches(predicted: list[list[str]]) -> Report:
    """05: predict the batches of one message of Lookup (read-only, parallel) and Note (neither) calls."""
    report = Report("Predicting the batches")

    async def lookup(inp: _KeyInput, ctx: Any) -> str:
        await asyncio.sleep(0.3)
        return f"{inp.key} = 1"

    async def note(inp: _TextInput, ctx: Any) -> str:
        await asyncio.sleep(0.1)
        return "noted"

    tools = [
        build_tool(
            name="Lookup",
            input_model=_KeyInput,
            call=lookup,
            description="Look up a key.",
            is_read_only=True,
            is_concurrency_safe=True,
        ),
        build_tool(name="Note", input_model=_TextInput, call=note, description="Append a note."),
    ]
    message = []
    for i, label in enumerate(BATCH_CALLS):
        name, arg = label.split()
        message.append(_use(f"toolu_{i}", name, **({"key": arg} if name == "Lookup" else {"text": arg})))
    agent = Agent(model=ScriptedModel([message, "Done."]), cwd=_scratch({}), tools=tools, allow=["Note"])
    agent.run("look things up")
    real: dict[int, list[str]] = {}
    for r in sorted(agent.trace, key=lambda r: r.index):
        real.setdefault(r.batch, []).append(BATCH_CALLS[r.index])
    actual = [real[b] for b in sorted(real)]
    guess = [[str(x) for x in batch] for batch in predicted]
    report.ok(
        sorted(x for b in guess for x in b) == sorted(BATCH_CALLS),
        "every call appears once",
        f"your batches should hold each of {BATCH_CALLS} exactly once.",
    )
    report.ok(
        len(guess) == len(actual),
        f"{len(actual)} batches",
        f"you predicted {len(guess)} batches; there were {len(actual)}. Hint: each Note runs alone, and a "
        "Lookup after a Note waits for it.",
    )
    for i, batch in enumerate(actual, 1):
        report.ok(
            i <= len(guess) and guess[i - 1] == batch,
            f"batch {i}: {batch}",
            f"batch {i} was {batch}; you predicted {guess[i - 1] if i <= len(guess) else 'nothing'}.",
        )
    return report


# --- 06 · result budgets ----------------------------------------------------------------------


class _ReportInput(BaseModel):
    rows: int


def check_spill_budget(make_tool: Callable[[], Any]) -> Report:
    """06: a budget that moves a 6,000-character report to a file but keeps a 600-character one."""
    report = Report("A budget that makes a tool spill")
    try:
        tool = make_tool()
    except Exception as e:
        return _crashed(report, "make_report_tool()", e)
    turns = [[_use("toolu_long", tool.name, rows=100), _use("toolu_short", tool.name, rows=10)], "Done."]
    agent = Agent(model=ScriptedModel(turns), cwd=_scratch({}), tools=[tool], approver=lambda req: "allow")
    agent.run("fetch both reports")
    by_id = {r.tool_use_id: str(r.result["content"]) for r in agent.trace}
    long, short = by_id.get("toolu_long", ""), by_id.get("toolu_short", "")
    report.ok(
        "<persisted-output>" in long,
        "the long report (about 6,000 characters) was moved to a file; the model got a preview and the path",
        f"the long report was kept in the message ({len(long):,} characters). Set max_result_chars below its size.",
    )
    report.ok(
        "<persisted-output>" not in short and short.startswith("row"),
        "the short report (about 600 characters) reached the model whole",
        "the short report was moved to a file too: the budget is too small. Keep it above about 600 characters.",
    )
    return report


# --- 07 · tool prompts ------------------------------------------------------------------------


def check_offered_tools(predicted: list[str]) -> Report:
    """07: which tools does `Agent(deny=['Bash', 'Write'])` offer the model?"""
    report = Report("Which tools are offered")
    agent = Agent(model=ScriptedModel([]), cwd=_scratch({}), deny=["Bash", "Write"])
    _, tools = agent.request_parts()
    offered = [t["name"] for t in tools]
    system = agent.system()
    guess = [str(x) for x in predicted]
    missing = [t for t in offered if t not in guess]
    extra = [t for t in guess if t not in offered]
    report.ok(not missing, f"offered: {offered}", f"these are offered too: {missing}. Hint: %agent_tools lists them.")
    report.ok(
        not extra,
        "nothing denied is predicted",
        f"{extra} are not offered: a tool denied as a whole is never shown to the model.",
    )
    report.ok(
        "Bash" not in system.split("Tools available now:")[-1].splitlines()[0],
        "and the system prompt's list of tools leaves Bash out too",
        "the system prompt still names Bash",
    )
    return report


# --- 08 · read state --------------------------------------------------------------------------


def check_read_first(turns: list[list[tuple[str, dict[str, Any]]]]) -> Report:
    """08: a scripted session whose Edit of config.ini succeeds (the runtime refuses an edit before a read)."""
    report = Report("Reading before editing")
    work = _scratch({"config.ini": "[app]\nport = 8000\n"})
    script: list[Any] = []
    for n, turn in enumerate(turns):
        script.append([_use(f"toolu_{n}_{i}", name, **inp) for i, (name, inp) in enumerate(turn)])
    script.append("Done.")
    try:
        agent = Agent(model=ScriptedModel(script), cwd=work, approver=lambda req: "allow")
        agent.run("change the port to 8080")
    except Exception as e:
        return _crashed(report, "Running your turns", e)
    edits = [r for r in agent.trace if r.tool_name == "Edit"]
    refused = [str(r.result["content"])[:140] for r in edits if r.is_error]
    report.ok(bool(edits), "your session edits config.ini", "your turns contain no Edit call.")
    report.ok(not refused, "no edit was refused", f"an edit was refused: {refused[:1]}")
    text = (work / "config.ini").read_text()
    report.ok(
        "port = 8080" in text,
        "config.ini now says port = 8080",
        f"config.ini still says {text.splitlines()[-1]!r}. Hint: the model must Read a file before it edits it.",
    )
    return report


# --- 09 · the live notebook -------------------------------------------------------------------


class Ledger:
    """A class whose methods a look at the variable must not run (they count their calls)."""

    calls = 0

    def __repr__(self) -> str:
        Ledger.calls += 1
        return "Ledger(...)"

    def __len__(self) -> int:
        Ledger.calls += 1
        return 1_000_000


class Rows(list):  # type: ignore[type-arg]
    """A list that lies about its length."""

    def __len__(self) -> int:
        return 99


def check_variables_prediction(rows_length: Any, ledger_code_ran: Any, token_shown: Any) -> Report:
    """09: what the Variables tool tells the model about three variables, and what it runs to find out."""
    from ipy_agent.notebook.variables import describe_value

    report = Report("What the agent sees of your variables")
    Ledger.calls = 0
    rows = describe_value(Rows([10, 20]), "rows")[1]
    ledger = describe_value(Ledger(), "ledger")[1]
    token = describe_value("sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", "api_token")[1]
    told = 2 if "2 items" in rows else 99
    report.ok(
        rows_length == told,
        f"rows: {rows!r}: the real length, from list's own slot, not the subclass's __len__",
        f"you said the model is told {rows_length!r} items for rows; it is told {told} ({rows!r}). Hint: the "
        "class's own methods are never called.",
    )
    ran = Ledger.calls > 0
    report.ok(
        ledger_code_ran == ran,
        f"ledger: {ledger!r}: none of Ledger's code ran",
        f"you said Ledger's code ran: {ledger_code_ran!r}; it {'did' if ran else 'did not'} ({ledger!r}). Hint: "
        "describing a variable must never run its __repr__ or __len__.",
    )
    shown = "sk-live" in token
    report.ok(
        token_shown == shown,
        f"api_token: {token!r}",
        f"you said the token's value is shown: {token_shown!r}; it {'is' if shown else 'is not'} ({token!r}). "
        "Hint: a name or value that looks like a credential is described by type and length only.",
    )
    return report


# --- 10 · containment -------------------------------------------------------------------------

CLASSIFIER_COMMANDS = ["ls -la", "grep -rn TODO .", "echo done > log.txt", "sort data.csv | head -5", "rm notes.txt"]


def check_classifier_prediction(predicted: dict[str, Any]) -> Report:
    """10: which commands the classifier judges read-only (they run at once, in the sandbox)."""
    report = Report("What the classifier lets through")
    agent = Agent(model=ScriptedModel([]), cwd=_scratch({}))
    bash = agent.registry.get("Bash")
    for command in CLASSIFIER_COMMANDS:
        real = bash.is_read_only(bash.input_model(command=command))
        guess = predicted.get(command)
        what = "read-only: runs without asking, inside the sandbox" if real else "not read-only: asks first"
        report.ok(
            guess is real,
            f"{command!r}: {what}",
            f"{command!r}: you said {guess!r}; it is {what}. Hint: a redirection (>) writes, and a pipe of "
            "read-only commands stays read-only.",
        )
    return report


# --- 11 · long sessions -----------------------------------------------------------------------


class _PageInput(BaseModel):
    n: int


def check_context_window(window: Any) -> Report:
    """11: a context window in which eight 6,000-character pages get old results cleared, and no compaction."""
    report = Report("Clearing before compaction")

    def page(inp: _PageInput, ctx: Any) -> str:
        return ((f"page {inp.n}: the dog sat on the mat. " + "lorem ipsum " * 5 + "\n") * 200)[:6_000]

    tool = build_tool(
        name="Page",
        input_model=_PageInput,
        call=page,
        description="Fetch page n.",
        is_read_only=True,
        is_concurrency_safe=True,
    )
    turns: list[Any] = [[_use(f"toolu_page_{n}", "Page", n=n)] for n in range(8)]
    try:
        agent = Agent(model=ScriptedModel([*turns, "Done."]), cwd=_scratch({}), tools=[tool], context_window=window)
        agent.run("fetch pages 0 to 7")
    except Exception as e:
        return _crashed(report, f"A session with context_window={window!r}", e)
    cm = agent.context_manager
    largest = max(s.tokens for s in cm.sizes)
    report.ok(
        cm.cleared > 0,
        f"old tool results were cleared ({cm.cleared}) as the conversation neared the window",
        f"nothing was cleared: the whole session (largest request {largest:,} tokens) fits in {cm.window:,} "
        "tokens. Choose a smaller window.",
    )
    report.ok(
        cm.compactions == 0,
        "and nothing had to be compacted: clearing was enough",
        f"the conversation was compacted {cm.compactions} time(s): the window is so small that clearing old "
        "results was not enough. Choose a larger one.",
    )
    report.ok(
        largest <= cm.window,
        f"no request went over the window (largest {largest:,} of {cm.window:,} tokens)",
        f"a request of {largest:,} tokens went over the {cm.window:,}-token window.",
    )
    return report


# --- 12 · MCP ---------------------------------------------------------------------------------


def check_annotations(annotations: dict[str, dict[str, Any]]) -> Report:
    """12: the annotations a server gives its tools, and the contract flags they become."""
    from ipy_agent.mcp.connection import CallOutcome, ToolInfo
    from ipy_agent.mcp.tools import McpTool

    report = Report("Annotations become the contract")

    async def invoke(server: str, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        return CallOutcome(content=[{"type": "text", "text": "ok"}])

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    tools = {}
    for name in ("search_notes", "delete_all_notes"):
        notes = annotations.get(name, {})
        if not isinstance(notes, dict):
            report.ok(False, "", f"the annotations of {name} must be a dict such as {{'readOnlyHint': True}}")
            return report
        info = ToolInfo(name=name, description=name, input_schema=schema, annotations=notes)
        tools[name] = McpTool(server="notes", origin="exercise", info=info, invoke=invoke)
    search, delete = tools["search_notes"], tools["delete_all_notes"]
    inp = search.input_model.model_validate({"text": "x"})
    report.ok(
        search.is_read_only(inp) and search.is_concurrency_safe(inp),
        "mcp__notes__search_notes is read-only and runs in parallel, without a prompt",
        "search_notes still asks and runs alone: give it {'readOnlyHint': True}.",
    )
    report.ok(
        not delete.is_read_only(inp) and delete.is_destructive(inp),
        "mcp__notes__delete_all_notes asks, and its prompt warns that it destroys data",
        "delete_all_notes is not marked destructive (or is read-only): give it {'destructiveHint': True} "
        "and no readOnlyHint.",
    )
    return report


# --- 13 · review and rewind -------------------------------------------------------------------

REWIND_FILES = ("config.ini", "draft.md", "old.log", "plan.md")


def _rewind_story() -> tuple[Path, Any]:
    """Three prompts through a real Agent (scripted model), your edit of draft.md, then rewind(2)."""
    work = _scratch({"config.ini": "port = 8000\n", "old.log": "yesterday's run\n"})
    turns: list[Any] = [
        [_use("toolu_plan", "Write", file_path="plan.md", content="# Plan\n- move to port 8080\n")],
        "Wrote plan.md.",
        [_use("toolu_read", "Read", file_path="config.ini")],
        [
            _use("toolu_port", "Edit", file_path="config.ini", old_string="port = 8000", new_string="port = 8080"),
            _use("toolu_draft", "Write", file_path="draft.md", content="# Draft\nThe service moved to 8080.\n"),
        ],
        "Port 8080, and a draft.",
        [
            _use("toolu_rm", "Bash", command="rm old.log", description="Remove the old log"),
            _use("toolu_again", "Edit", file_path="config.ini", old_string="port = 8080", new_string="port = 9090"),
        ],
        "Removed old.log; port 9090.",
    ]
    agent = Agent(model=ScriptedModel(turns), cwd=work, approver=lambda req: "allow")
    agent.run("Write a plan for the move.")
    agent.run("Move the service to port 8080 and draft the announcement.")
    with open(work / "draft.md", "a") as f:  # you, between prompts 2 and 3
        f.write("Ask ops before Friday.\n")
    agent.run("Clean up the old log and use port 9090 instead.")
    return work, agent.rewind(2)


def _names(value: Any) -> set[str]:
    """A set of file names from what the learner wrote: a set, a list, one name, or None."""
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    try:
        return {str(name) for name in value}
    except TypeError:
        return {str(value)}


def check_rewind_prediction(port_after: Any, files_after: Any, kept: Any) -> Report:
    """13: after three prompts and your own edit of draft.md, what `agent.rewind(2)` puts back and keeps."""
    report = Report("Predicting a rewind")
    try:
        work, rewound = _rewind_story()
    except Exception as e:
        return _crashed(report, "The three prompts and the rewind", e)
    real_port = int((work / "config.ini").read_text().split("=")[1])
    real_files = {name for name in REWIND_FILES if (work / name).exists()}
    real_kept = {name for name in REWIND_FILES if any(item.startswith(name) for item in rewound.kept)}
    report.ok(
        port_after == real_port,
        f"config.ini says port = {real_port} again: both prompts' edits undone in one step",
        f"you said port {port_after!r}; config.ini says port = {real_port}. Hint: rewind(2) goes back to just "
        "before prompt 2, so every change of prompts 2 and 3 is undone.",
    )
    predicted = _names(files_after)
    report.ok(
        predicted == real_files,
        f"the files after the rewind: {sorted(real_files)}",
        f"you said {sorted(predicted)} exist after the rewind; it is {sorted(real_files)}. Hint: what prompt 1 did "
        "stays; a file you changed after the agent wrote it is never thrown away; what a shell command did is "
        "only listed, not put back.",
    )
    said_kept = _names(kept)
    report.ok(
        said_kept == real_kept,
        f"kept and named as yours: {sorted(real_kept)} ({'; '.join(rewound.kept)})",
        f"you said the rewind keeps {sorted(said_kept)}; it keeps {sorted(real_kept)}. Hint: a file is kept when "
        "someone else changed it after the agent's last write.",
    )
    return report


# --- 14 · running cells -----------------------------------------------------------------------


class _Page:
    """A notebook open in a stand-in for JupyterLab, as in notebook 14: cells with ids, sources,
    tags and outputs, answering the live-notebook protocol."""

    def __init__(self, root: Path, cells: list[dict[str, Any]]) -> None:
        self.root, self.cells = root, cells

    def hello(self) -> dict[str, Any]:
        from ipy_agent.notebook.protocol import PROTOCOL

        return {
            "protocol": PROTOCOL,
            "event": "hello",
            "path": "pipeline.ipynb",
            "server_root": str(self.root),
            "extension_version": "stand-in",
        }

    def cell(self, cell_id: str) -> dict[str, Any]:
        return {c["id"]: c for c in self.cells}[cell_id]

    def summary(self, c: dict[str, Any], outputs: bool) -> dict[str, Any]:
        outs = c.setdefault("outputs", [])
        s = {
            "id": c["id"],
            "index": self.cells.index(c),
            "cell_type": "code",
            "source": c["source"],
            "execution_count": c.get("execution_count"),
            "output_count": len(outs),
            "outputs_size": len(str(outs)),
            "tags": c.get("tags", []),
        }
        s.update({"outputs": outs} if outputs else {"output_summary": []})
        return s

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        from ipy_agent.notebook.protocol import PROTOCOL

        base = {"protocol": PROTOCOL, "reply_to": request["request_id"]}
        try:
            result = getattr(self, "op_" + request["op"])(request.get("args") or {})
        except KeyError as e:
            return {**base, "ok": False, "code": "not_found", "error": f"no cell with id {e}"}
        return {**base, "ok": True, "result": result}

    def op_list_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"path": "pipeline.ipynb", "dirty": True, "cells": [self.summary(c, False) for c in self.cells]}

    def op_read_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        ids = args.get("cell_ids") or [c["id"] for c in self.cells]
        return {"path": "pipeline.ipynb", "cells": [self.summary(self.cell(i), True) for i in ids]}

    def op_set_outputs(self, args: dict[str, Any]) -> dict[str, Any]:
        c = self.cell(args["cell_id"])
        c["outputs"], c["execution_count"] = args["outputs"], args.get("execution_count")
        return {"cell": self.summary(c, False)}

    def op_scroll_to(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"index": self.cells.index(self.cell(args["cell_id"]))}

    def op_get_agent_metadata(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {}}


def _run_cells_in_a_kernel(cells: list[dict[str, Any]], turns: list[Any], mode: str) -> tuple[Any, list[str]]:
    """Run a scripted Agent against `cells` open in a stand-in page; this kernel's shell runs
    the cells (outside a kernel, a fresh IPython shell does, removed afterwards)."""
    from IPython import get_ipython
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from ipy_agent.notebook.bridge import NotebookBridge

    shell, made = get_ipython(), False
    if shell is None:
        cfg = Config()
        cfg.HistoryManager.enabled = False
        shell, made = InteractiveShell.instance(config=cfg), True
    try:
        work = _scratch({})
        bridge = NotebookBridge(shell, cwd=work)
        bridge.connect_local(_Page(work, cells))
        asked: list[str] = []
        agent = Agent(
            model=ScriptedModel(turns),
            cwd=work,
            notebook=bridge,
            permission_mode=mode,
            approver=lambda req: asked.append(req.tool_use_id) or "deny",
        )
        agent.run("Refresh the summary and deploy the model.")
        return agent, asked
    finally:
        if made:
            import atexit

            atexit.unregister(shell.atexit_operations)
            InteractiveShell.clear_instance()


def _outputs_text(cell: dict[str, Any]) -> str:
    return "".join(str(o.get("text", "")) for o in cell.get("outputs", []))


def check_never_run(cells: Any) -> Report:
    """14: tag the deploy cell so that the agent can never run it, even in bypassPermissions, and
    leave the summary cell runnable."""
    import copy

    report = Report("A cell the agent must never run")
    try:
        ours = copy.deepcopy(list(cells))
        ids = [c["id"] for c in ours]
        for c in ours:
            c["tags"] = list(c.get("tags") or [])
    except Exception as e:
        return _crashed(report, "Reading CELLS (a list of dicts with 'id', 'source' and 'tags')", e)
    if not report.ok(
        {"summary", "deploy"} <= set(ids),
        "the notebook has its summary and deploy cells",
        f"CELLS has the cells {ids}; keep the cells 'summary' and 'deploy' (change only their tags).",
    ):
        return report
    turns = [
        [_use("toolu_deploy", "NotebookRun", cell_id="deploy")],
        [_use("toolu_summary", "NotebookRun", cell_id="summary")],
        "Done.",
    ]
    try:
        agent, asked = _run_cells_in_a_kernel(ours, turns, "bypassPermissions")
    except Exception as e:
        return _crashed(report, "Running the agent against your cells", e)
    by_id = {r.tool_use_id: r for r in agent.trace}
    deploy, summary = (next(c for c in ours if c["id"] == name) for name in ("deploy", "summary"))
    told = str(by_id["toolu_deploy"].result["content"]) if "toolu_deploy" in by_id else ""
    ran = bool(deploy.get("outputs"))
    if "toolu_deploy" in asked:
        wrong = (
            "deploy went to the person's approval (agent:ask): one click and it runs. Use the tag that refuses "
            "the run in every mode: agent:never-run."
        )
    elif ran:
        wrong = (
            f"in bypassPermissions the agent ran deploy (it printed {_outputs_text(deploy).strip()!r}). Give the "
            "deploy cell the tag agent:never-run."
        )
    else:
        wrong = f"deploy was not refused by a cell policy; the model was told {told[:120]!r}. Tag it agent:never-run."
    if report.ok(
        "must not be run" in told and not ran and "toolu_deploy" not in asked,
        "deploy was refused in bypassPermissions, before any prompt: the tag is the person's word",
        wrong,
    ):
        report.ok(
            "ask the person" in told,
            f"the model was told why and what to do instead: {told[:100]!r}...",
            f"the model was told {told[:120]!r}",
        )
    report.ok(
        "north" in _outputs_text(summary),
        f"summary still runs: {_outputs_text(summary).strip()!r}",
        f"summary did not run (the model was told {str(by_id['toolu_summary'].result['content'])[:120]!r}). "
        "Tag only the deploy cell: the agent may still run the others.",
    )
    return report


# --- 15 · delegation --------------------------------------------------------------------------


def _bool_said(value: Any) -> str:
    return repr(value) if isinstance(value, bool) else f"{value!r} (True or False?)"


def check_delegation_prediction(
    config_text_in_parent: Any, parent_has_read_config: Any, explore_can_edit: Any
) -> Report:
    """15: after one Task to an explore subagent, what the parent's context holds, and what the subagent could do."""
    import json

    report = Report("What a subagent keeps apart")
    work = _scratch(
        {
            "train/config.py": "# Training settings\nEPOCHS = 4\nLEARNING_RATE = 0.003\nBATCH_SIZE = 64\n",
            "train/train.py": "from config import LEARNING_RATE\n",
        }
        | {f"notes_{i:02d}.md": f"# Notes {i}\n" + "Nothing about training here.\n" * 40 for i in range(10)}
    )
    transcript = Path(__file__).resolve().parent / "transcripts" / "15_delegate.json"
    agent = Agent(model=ScriptedModel.from_file(transcript), cwd=work)
    try:
        agent.run("What learning rate does the training script use?")
    except Exception as e:
        return _crashed(report, "The delegated search", e)
    in_parent = "BATCH_SIZE" in json.dumps(agent.messages)
    report.ok(
        config_text_in_parent is in_parent,
        "the config file's text stayed in the subagent: the parent holds only the one-line report",
        f"you said the file's text is in the parent's history: {_bool_said(config_text_in_parent)}; it "
        f"{'is' if in_parent else 'is not'}. Hint: only the subagent's final report comes back as the Task's result.",
    )
    has_read = agent.read_state.get(str(work / "train/config.py")) is not None
    report.ok(
        parent_has_read_config is has_read,
        "the parent has not read train/config.py: to edit it, it must Read it itself",
        f"you said the parent has read train/config.py: {_bool_said(parent_has_read_config)}; it "
        f"{'has' if has_read else 'has not'}. Hint: a subagent's read state is its own, like its history.",
    )
    can_edit = "Edit" in agent.tool("Task").types["explore"].tools
    report.ok(
        explore_can_edit is can_edit,
        f"explore's tools are {', '.join(agent.tool('Task').types['explore'].tools)}: nothing that edits",
        f"you said an explore subagent can Edit: {_bool_said(explore_can_edit)}; it "
        f"{'can' if can_edit else 'cannot'}. Hint: explore gets the read-only tools, in plan mode.",
    )
    return report


# --- 16 · instructions and skills -------------------------------------------------------------


def check_skill(skill_md: str) -> Report:
    """16: a SKILL.md the runtime accepts, named weekly-report, whose description says when to use it."""
    from ipy_agent.tools.skills.catalog import discover_skills

    report = Report("A skill the agent can find")
    work = _scratch({".ipy_agent/skills/weekly-report/SKILL.md": skill_md})
    catalog = discover_skills(work, personal=work / "no-personal-skills", builtin=False)
    for p in catalog.problems:
        report.ok(False, "", f"the skill is not offered: {p.problem}.")
    skill = catalog.get("weekly-report")
    if not report.ok(
        skill is not None,
        "the skill weekly-report is offered",
        f"no skill named weekly-report was found (found: {[s.name for s in catalog.skills]}).",
    ):
        return report
    assert skill is not None
    report.ok(
        "report" in skill.description.lower() and len(skill.description) >= 20,
        f"its description says when to use it: {skill.description!r}",
        f"the description {skill.description!r} is too thin to tell the model when to load the skill.",
    )
    report.ok(
        len(skill.body.strip()) > 0,
        "the procedure follows the front matter",
        "there is no procedure after the front matter: the skill would load nothing.",
    )
    agent = Agent(model=ScriptedModel([]), cwd=work)
    report.ok(
        "weekly-report" in agent.system(),
        "the system prompt lists it, by name and description only",
        "the system prompt does not list the skill.",
    )
    return report


# --- 17 · reproducibility ---------------------------------------------------------------------

# A morning in a notebook: what ran in the kernel, in this order, and the cells the notebook has now.
HIDDEN_STATE_RUNS = [
    "data = [3, 1, 2]",
    "data = sorted(data)",
    "scale = 10",  # its cell was deleted afterwards
    "result = [x * scale for x in data]",
    "debug = True",  # typed in a scratch cell, deleted afterwards
]
HIDDEN_STATE_CELLS = ["data = [3, 1, 2]", "data = sorted(data)", "result = [x * scale for x in data]"]


def check_hidden_state_prediction(hidden: Any) -> Report:
    """17: which names does NotebookVerify list under "hidden state" for HIDDEN_STATE_RUNS and
    HIDDEN_STATE_CELLS? The check replays the runs in one namespace (the live kernel), the cells top
    to bottom in another (the fresh kernel), and compares them with the tool's own `compare`."""
    from ipy_agent.notebook.variables import VariableInfo, describe_value
    from ipy_agent.notebook.verify import FreshRun, VerifyCell, compare

    report = Report("Hidden state")
    if not report.ok(
        isinstance(hidden, (set, list, tuple)) and all(isinstance(n, str) for n in hidden),
        "HIDDEN is a set of names",
        f"HIDDEN should be a set of variable names, like {{'data'}}; it is {hidden!r}.",
    ):
        return report
    predicted = set(hidden)

    def variables(ns: dict[str, Any]) -> list[VariableInfo]:
        return [
            VariableInfo(name=k, type=t, summary=v)
            for k in ns
            if not k.startswith("_")
            for t, v in [describe_value(ns[k], k)]
        ]

    live: dict[str, Any] = {}
    for source in HIDDEN_STATE_RUNS:
        exec(source, live)
    fresh_ns: dict[str, Any] = {}
    cells, outputs = [], {}
    for i, source in enumerate(HIDDEN_STATE_CELLS):
        cell_id = f"c{i}"
        cells.append(VerifyCell(cell_id=cell_id, index=i, cell_type="code", source=source, execution_count=i + 1))
        try:
            exec(source, fresh_ns)
            outputs[cell_id] = []
        except Exception as e:
            outputs[cell_id] = [{"output_type": "error", "ename": type(e).__name__, "evalue": str(e)}]
    fresh = FreshRun(outputs=outputs, variables=variables(fresh_ns), kernel="a fresh namespace", seconds=0.0)
    found = compare(cells, fresh, live_variables=variables(live), runs=None)
    truth = {m.name for m in found.hidden_state}
    why = {
        "scale": "scale came from a cell deleted after it ran: the kernel holds it, no cell defines it",
        "debug": "debug was typed in a scratch cell, deleted since: no cell defines it",
    }
    for name in sorted(truth):
        report.ok(name in predicted, f"{name} is hidden state", f"{why.get(name, name)}: add it to HIDDEN.")
    for name in sorted(predicted - truth):
        if name == "result":
            wrong = (
                "result is not hidden state: a cell defines it (result = [x * scale ...]). Top to bottom that "
                "cell raises NameError, so result differs (listed under 'variable differs'), but hidden state is "
                "what NO cell defines."
            )
        elif name == "data":
            wrong = "data is defined by the first cell, and the fresh run makes the same list: not hidden state."
        else:
            wrong = f"{name} is not a name the kernel holds here; the kernel holds {sorted(_live_names(live))}."
        report.ok(False, "", wrong)
    return report


def _live_names(ns: dict[str, Any]) -> list[str]:
    return [k for k in ns if not k.startswith("_")]
