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
    "check_deny_hook",
    "check_offered_tools",
    "check_read_first",
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
