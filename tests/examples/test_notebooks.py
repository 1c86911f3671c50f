"""The teaching notebooks in examples/ are tests: each one runs headless, offline, with no key.

nbclient starts a real kernel for each notebook and executes every cell (an error in any cell
fails the test). Then what a reader would notice is checked in the outputs: the file on disk after
an approved edit, what the model was told, the stages of the trace. The committed notebooks carry
no outputs, so their diffs show only what someone wrote.

Each notebook is executed once in CI: by the course build (examples/course/build.py runs it the
same way, offline, and fails on an error in any cell), which keeps the executed notebooks in the
site. When IPY_AGENT_COURSE_SITE names that site (`.ci/run` sets it), the checks below read the
build's outputs instead of executing the notebook again; without it, the test executes it here.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from examples.course import build as course

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("[0-9][0-9]_*.ipynb"))
CELL_TIMEOUT = 180  # seconds for one cell; a run that waits for a prompt nobody answers ends here
# Notebooks that take longest (a 40-request session; MCP servers started five times): `-m "not slow"`
# skips them while working; CI runs them.
SLOW = {"11_long_sessions", "12_mcp"}

# What a reader sees happen, per notebook, in the order the notebook shows it.
EXPECT: dict[str, list[str]] = {
    "01_tour": [
        "Prompts in this run are answered automatically for the course build",  # the cell says so
        "Allowed once\n",  # the prompt the learner answers with Allow in JupyterLab
        "run ended: end_turn after 3 turns",
        "notes.txt on disk now:\nMeeting notes\nWe agreed on the plan.",
        "Permission: allow (default: read-only)",
        "Permission: allow (person: allowed once)",
        "Turn 1: 2 call(s) in 1 batch(es)",
    ],
    "02_tool_contract": [
        '"minimum": 1',  # the pydantic bounds reach the model's schema
        "is_read_only         False\nis_concurrency_safe  False",
        "is_read_only   False   (the flag raised",
        "is_destructive True",
        "[approval prompt] WordCount path='a.txt', top=3  ->  Allow",
        "toolu_count_a: batch 1, decision allow by person\ntoolu_count_b: batch 2, decision allow by person",
        "toolu_count_a: batch 1, decision allow by default",
        "toolu_count_b: batch 1, decision allow by default  | the person saw: WordCount b.txt — 7 words, mostly 'the'",
        "The parameter `path` is expected as `string` but was provided as `integer`.",
        "An unexpected parameter `file` was provided.",
        "'c.txt' is not a file. Use Glob to find the file",
        "WordCount failed with ZeroDivisionError: division by zero",
        "No such tool available: 'CountWords'. The tools you can call are: WordCount.",
    ],
    "03_registry_permissions": [
        "Bash             hidden",
        "Bash: denied by rule 'Bash' (argument)",
        "offered in turn 1: ['Read', 'Edit', 'Write', 'Glob', 'Grep', 'NotebookEdit', 'Skill', 'AskUserQuestion', 'Task']",
        "Permission to use Read was denied (denied by rule 'Read(**/.env)' (argument))",
        "(1 file hidden by deny rules: Read(**/.env))",
        "No such tool available: 'Bash'.",
        "default            {'Read notes.txt': 'allow', 'Edit notes.txt': 'ask', 'Write new.txt': 'ask', 'Bash ls': 'allow', 'Bash touch made-by-bash.txt': 'ask'}",
        "acceptEdits        {'Read notes.txt': 'allow', 'Edit notes.txt': 'allow', 'Write new.txt': 'allow', 'Bash ls': 'allow', 'Bash touch made-by-bash.txt': 'ask'}",
        "plan               {'Read notes.txt': 'allow', 'Edit notes.txt': 'deny', 'Write new.txt': 'deny', 'Bash ls': 'allow', 'Bash touch made-by-bash.txt': 'deny'}",
        "bypassPermissions  {'Read notes.txt': 'allow', 'Edit notes.txt': 'allow', 'Write new.txt': 'allow', 'Bash ls': 'allow', 'Bash touch made-by-bash.txt': 'allow'}",
        "echo hello                 allow                  allowed by rule 'Bash(echo:*)'",
        "echo hello && touch x.txt  ask -> person said no",
        "rm -f notes.txt            deny                   denied by rule 'Bash(rm:*)'",
        "docs/guide.md              allow                  allowed by rule 'Edit(docs/**)'",
        "notes.txt still there: True",
        "touch b.txt  allow (rule: allowed by rule 'Bash(touch:*)' (granted))",
        "rm a.txt     deny  (person: )",
        "allow rules now: [('Bash(touch:*)', 'granted')]",
        "files: ['a.txt', 'b.txt', 'notes.txt']",
    ],
    "04_lifecycle_hooks": [
        "find ok",
        "parse ok",
        "validate ok",
        "permission allow (default: read-only)",
        "call ok",
        "map ok",
        "budget ok",
        "permission allow (person: allowed once)",
        "validate_after_approval ok",
        "#3 Edit notes.txt  [batch 3, error",
        "validate error",
        "[approval prompt] Write drafts/summary.md  ->  Allow",  # the prompt names the rewritten path
        "A PreToolUse hook blocked this Bash call: no network access from this project",
        "(hook note: this file has 6 words)",
        "A PreToolUse hook blocked this Edit call: hook 'review_edits' raised KeyError: 'path'",
        'Input as the model sent it: {"file_path": "summary.md"',
        "files on disk: ['drafts/summary.md']",
        "notes.txt: We agreed on teh plan.",
    ],
    "05_concurrency": [
        "Turn 1: 6 call(s) in 3 batch(es)",
        "#3 Lookup gamma  [batch 1",
        "#4 Note alpha, beta and gamm  [batch 2",
        "#6 Lookup epsilon  [batch 3",
        "results went back to the model in this order: "
        "['toolu_look_a', 'toolu_look_b', 'toolu_look_c', 'toolu_note', 'toolu_look_d', 'toolu_look_e']",
        "cp data.csv backup/data.csv  error     Exit code 1",
        "echo backed up >> log.txt    cancelled Cancelled: an earlier call in the same message, "
        "Bash(cp data.csv backup/data.csv), failed",
        "rm data.csv                  cancelled",
        "files now: ['data.csv']",
        "stop reason: interrupted",
        "toolu_slow -> Interrupted by the person before this tool call finished",
        "toolu_note_after -> Interrupted by the person before this tool call finished",
        "text -> [The person interrupted this request.]",
        "history problems: []",
        "streaming_tools=True : the slow lookup started before the message was complete: True",
        "streaming_tools=False: the slow lookup started before the message was complete: False",
    ],
    "06_result_budgets": [
        "<persisted-output>\n  Output too large (65.6 KB, 67,196 characters).",
        "67,196 characters on disk, ",  # and a preview of about 2,000 in the model's context
        "outside the working directory: True",
        "the model read it back: Read ",
        "(from 798, 5), permission allow",
        "801\t00801 ERROR build: disk quota exceeded on /var/cache",
        "toolu_log_api  output 48,596 -> model gets ",
        "moved to toolu_log_api.txt",
        "toolu_log_web  output 43,196 -> model gets 43,196  kept in the message",
        "toolu_log_db   output 37,096 -> model gets 37,096  kept in the message",
        "ClearQueue's result: '(ClearQueue completed with no output)'",
    ],
    "07_tool_prompts": [
        "- Tools available now: Read, Edit, Write, Glob, Grep, Bash, NotebookEdit, Skill, AskUserQuestion, Task",
        "deny=['Bash']   - Tools available now: Read, Edit, Write, Glob, Grep, NotebookEdit, Skill, AskUserQuestion, "
        "Task   | tools sent: ['Read', 'Edit', 'Write', 'Glob', 'Grep', 'NotebookEdit', 'Skill', 'AskUserQuestion', 'Task']",
        "Grep: Do not run `grep`, `rg`, `ack` or `git grep` through Bash",
        'route: Grep("TODO") -> Read(src/app.py)',
        "=== mode default",
        "asked the person: False; result: File '",
        "has not been read yet. Read it first",
        "asked the person: True; result: 1 outside the project",
        "(1 file hidden by deny rules: Read(**/.env))",
        "asked the person: True; result: Created ",
        "Permission to use Bash was denied (the command names '.env'",
        "reports/2025/summary.md exists: True",
        "=== mode bypassPermissions",
        "has not been read yet.",
        "asked the person: False; result: 1 outside the project",
        "Permission to use Bash was denied (the command names '.env'",
        "reports/2025/summary.md exists: True",
    ],
    "08_read_state": [
        "has not been read yet. Read it first",
        "read state for config.ini: hash",
        "recorded by Edit",
        "disk: [app] | name = demo | port = 8000 | debug = false | level = info",
        "has changed since you read it",
        "disk: [app] | name = shop | port = 8080 | debug = false | level = info",  # both changes kept
        "Edit  config.ini             -> Edited ",  # after a touch that changed no byte
        "'config.ini' was only partly read (lines 1-2), and Write would replace all of it",
        "disk: [app] | name = shop | port = 8080 | debug = false | level = warning",
        "NotebookEdit result: Notebook '",
        "has changed since you read it",
        "plot cell on disk: df.plot(x='a')",
    ],
    "09_live_notebook": [
        "front end: no JupyterLab front end with the ipy_agent extension answered",  # headless: says so
        "NotebookRead: needs the JupyterLab extension: not connected in this page",
        "NotebookRun: needs the JupyterLab extension: not connected in this page",
        "Variables all — 13 variables",
        "sales: list = 6 items",
        "prices: dict = 3 items",
        "title: str = 'Quarterly sales'",
        "ledger: Ledger = (not described: no code of this type is run to look at it)",
        "Edited analysis.ipynb: replaced cell total",
        "[total] total = sum(sales)\nprint(f'total sales: {total}')",
    ],
    "10_containment": [
        "sandbox available: True",  # CI installs bubblewrap, as the security suites need it too
        "rm notes.txt                 read-only: False",
        "PWN exists: False",  # the classifier's hole (or, once it is fixed, its prompt) wrote nothing
        "=== sandbox='auto'",
        "Create a file     allow (tool    ) Exit code 1",
        "touch: cannot touch 'PWN': Read-only file system",
        "Phone home        allow (tool    ) Exit code 1 / ConnectionRefusedError",
        "effects: {'PWN created': False, 'notes.txt deleted': False, 'canary reached': False}",
        "=== sandbox='off'",
        "Create a file     deny  (approver) Bash has no OS sandbox",
        "effects: {'PWN created': False, 'notes.txt deleted': False, 'canary reached': False}",
        "decision: allowed by rule 'Bash(touch:*)' (argument); made.txt exists: True",
    ],
    "11_long_sessions": [
        "end_turn after 41 requests: Pages 3, 10, 17, 24 and 31 mention a cat.",
        "compactions: 1; largest request",
        "of a 10,000-token window",
        "history problems: []",
        "old tool result cleared: 8.0k -> 6.6k tokens",  # one result a turn: three recent ones are kept
        "context compacted:",
        "[Tool result cleared to save context: the 6,000 characters output of Page",
        "call Page again with the same input.]",
        "[Conversation compacted] The earlier part of this conversation",
        "Context window: 10,000 tokens (set with context_window=)",
        "tool results cleared and 1 compaction so far",
        "Context compacted:",
        "tool results cleared and 2 compactions so far",
        "in the read state before compaction: ['notes.txt']",
        "in the read state after compaction:  []",
        "Edit -> File '",
        "has not been read yet. Read it first",
        "notes.txt: alpha | gamma |",
        "the summary request carried the hook's instruction: True",
    ],
    "12_mcp": [
        "[approval prompt] mcp__notes__add_note {'text': 'The meeting moved to Tuesday.'}  ->  Allow",
        "mcp__notes__search_notes      yes      yes        yes        no           MCP server notes",
        "mcp__notes__add_note          yes      no         no         no           MCP server notes",
        "mcp__notes__delete_all_notes  yes      no         no         yes          MCP server notes",
        "Turn 1: 2 call(s) in 1 batch(es)",  # a server's read-only tool beside the built-in Read
        "permission allow (default: read-only)",
        "permission allow (person: allowed once)",
        "mcp__notes__delete_all_notes batch 2  deny  by hook     -> A PreToolUse hook blocked this "
        "mcp__notes__delete_all_notes call: this notebook never dele",
        "offered: ['search_notes', 'add_note']",
        "denied by rule 'mcp__notes' (argument)",
        "mcp__notes__add_note -> allowed by rule 'mcp__notes' (argument) | Added note 2.",
        # A server's form reaches the approver; what the person left out takes the schema's defaults.
        "[form from library] Borrow 'Dune'?  fields: ['copy', 'weeks', 'reminder'], required: ['copy']",
        "mcp__library__borrow   -> Lent 'Dune' as ebook for 3 weeks, with a reminder.",
        "ReadMcpResourceTool    -> Resource library://book/Dune",
        "prompt block: [the person attached the resource library://rules of library]",
        "E-books return themselves.",
        # The same in a %agent cell: the trust prompt, the call's prompt, the form, answered as the scene says.
        "✓ done: MCP server library",
        'MCP server \'library\' asked: "Borrow \'Dune\'?"; answered with {"copy": "ebook", "weeks": 3, "reminder": true}',
        "mcp__library__borrow   -> Lent 'Dune' as ebook for 3 weeks, with a reminder.\nattached: "
        "['[the person attached the resource library://rules of library]']",
        # The notebook served to an outside agent (the mcp SDK's client, from the notebook itself).
        'claude mcp add --transport http notebook http://127.0.0.1:',
        "tools offered: ['Glob', 'Grep', 'NotebookEdit', 'NotebookRead', 'NotebookRun', 'Read', 'Variables']",
        '<cell id="total" index="1" type="code">\ntotal = 40 + 2',
        "[approval prompt] NotebookEdit {'notebook_path': ",
        "NotebookEdit: Replaced the source of code cell 'total' (cell-1) in <work>/analysis.ipynb.",
        "Read          from 'outside-agent': allow by default (read-only)",
        "NotebookEdit  from 'outside-agent': allow by person (allowed once)",
        "a wrong token: 401",
        'notes on the server\'s disk: ["The meeting moved to Tuesday.", "Lunch on Friday."]',
    ],
    "13_review_and_rewind": [
        "[approval prompt] Edit report.py  ->  Allow",
        "files now: NOTES.md, report.py, sales.csv",
        "report.py line 1: # Sales by region (whole euros)",
        "files kept: ['report.py', 'NOTES.md (did not exist)']",
        "files kept: ['report.py']; shell changes seen: ['old_totals.csv']",
        "[5] you (prompt 2): Round the totals",
        "Rewound to before prompt 2",
        "Files restored:\n  - report.py",
        "Kept: changed since the agent's last change (force overrides):\n  - NOTES.md",
        "Changed by approved shell commands, not restored:\n  - old_totals.csv (by `rm old_totals.csv`)",
        'report.py prints: print(f"{region}: {total:.2f}")',
        "NOTES.md is yours: True",
        "messages left: 4 | prompts left: [1]",
        "the model was told: [The person rewound the conversation to before their prompt 2.",
        "Prompts in this run are answered automatically for the course build",  # the cell says so
        "accepted: replace cell 17",  # the report cell's edit (in JupyterLab: Accept in the cell)
        "rejected: replace cell 16",  # the prices' edit, with the learner's reason
        "keep the cents in the data",
        'after the review, 13-prices: prices = {"north": 1610.40, "south": 950.10}',
        'after the review, 13-report: print(f"{region}: {round(total)} euros")',
        'after the rewind, 13-report: print(f"{region}: {total:.2f}")',
    ],
    "14_running_cells": [
        "front end: connected to 'analysis.ipynb' (ipy-agent-notebook stand-in)",
        "'revenue': int64, 0 null, range 0 to 499",  # Variables by name: the library's own summary
        "[approval prompt] Run in this kernel, from analysis.ipynb: cell 2 · sales = sales[sales['revenue'] > 0].res…\n"
        "    overwrites sales: DataFrame 1,000 × 2\n"  # noqa: RUF001
        "    may modify sales (item assignment)",
        "What it could change: overwrites sales: DataFrame 1,000 × 2",  # noqa: RUF001
        "Cell 3 · model = fit_slowly(sales) (id 'train') must not be run by the agent (its tag agent:never-run)",
        "model defined: False",
        "bypassPermissions toolu_run_train  -> Permission to use NotebookRun was denied (Cell 3 · model = fit_slowly",
        "raised KeyError: 'revenu'",
        "-> 1 | by_region = sales['revenu'].groupby(sales['region']).sum()",
        "DataFrame sales's columns: 'region', 'revenue', 'revenue_k' (close to 'revenu': 'revenue'",
        "The report cell now: by_region = sales['revenue'].groupby(sales['region']).sum()",
        "[approval prompt] Run in this kernel, from analysis.ipynb: cells 2 · sales = sales[sales['revenue'] > 0]",
        "cell 2: overwrites sales: DataFrame 2,000 × 2",  # noqa: RUF001
        "- cell 2 · sales = sales[sales['revenue'] > 0].res… (id 'clean'): may be stale: uses sales, which cell 1 · "
        "sales = make_sales(2_000) (id 'load') redefined after it ran",
        "- cell 4 · by_region = sales['revenue'].groupby(sa… (id 'report'): may be stale: uses sales,",
        "NotebookRead after the rerun, the run state:\n"
        "(from the cells' definitions and uses and the order they ran; rerun the fewest cells that fix it, in "
        "notebook order):\n- cell 3 · model = fit_slowly(sales) (id 'train'): never run in this kernel",
        "rows in sales now: 1996",
        "Prompts in this run are answered automatically for the course build",  # the cell says so
        "Allowed once",  # the effects prompt the learner answers with Allow in JupyterLab
        "overwrites orders: DataFrame",
        "may modify orders (item assignment)",
        "orders now: 2 rows, columns ['item', 'price', 'price_eur']",
    ],
    "15_delegation": [
        "explore's tools: Read, Glob, Grep, Bash, NotebookRead, Variables",
        "  user      tool_result  The learning rate is set in train/config.py, line 3",
        "the subagent's own calls (kept apart): ['Grep \"training\"', 'Grep \"LEARNING_RATE\"', 'Read train/config.py']",
        "the config file's text is in the parent's history: False",
        "the parent has read train/config.py itself: False",
        "the Task's row says: explore: find the learning rate — 4 turns, 3 calls,",
        "#1 Task explore: find the learning rate  [batch 1, done,",
        '    ↳ Grep "LEARNING_RATE"  [done,',
        "    ↳ Read train/config.py  [done,",
        "Prompts in this run are answered automatically for the course build",  # the cell says so
        "Answered: Tuning: Schedule",  # the option the learner clicks in JupyterLab
        '"How should I tune the learning rate?" = "Schedule"',
        "There is no person to ask (this run is non-interactive: a headless run).",
        "[prompt in the cell] Bash: Train the model  ->  allow",
        "Training started in the background as bash_1.",
        "  bash_1     running",
        "2 of 4 new lines matched the filter\nepoch 1 loss 0.90\nepoch 2 loss 0.70",
        "the request carried: Background command bash_1 (Train the model) exited with code 0 after",
        "2 of 4 new lines matched the filter\nepoch 3 loss 0.50\nepoch 4 loss 0.40",
        "  bash_1     exit 0",
        "after %agent_reset: Nothing runs in the background.",
    ],
    "17_reproducibility": [
        "total with VAT: 288.00",  # the kernel still holds rate, whose cell was deleted
        "raises            cell 7 · total = sum(prices) * (1 + rate): NameError: name 'rate' is not defined\n"
        "variable differs  total: float = 288.0 → not defined\n"
        "hidden state      rate: float = 0.2\n"
        "not rerun         cell 9 · %agent_verify;",
        "Prompts in this run are answered automatically for the course build",  # the cell says so
        "replaced cell 7 · rate = 0.2",  # the agent defines rate where it is used, and reruns the cell
        "total with VAT: 288.00",
        "NotebookVerify the open notebook — reproduces",  # the gate, before the run may end
        "Verify: reproduces",
        "NotebookVerify ran the notebook top to bottom in a new kernel: it reproduces now.",
        "verdict    reproduces\nnot rerun  cell 9 · %agent_verify;",  # section 4, the same check again
    ],
    "16_instructions_and_skills": [
        "=== no guidance: Read(sales.csv) -> Write(summary.md)",
        "- north: 1610.40",
        "=== AGENTS.md: Read(sales.csv) -> Write(reports/by_region.csv)",
        "region,total\nnorth,1610\nsouth,950",
        "=== a skill: Skill(sales-report) -> Read(",
        "template.md) -> Read(sales.csv) -> Write(reports/sales.md)",
        "| north | 1,610 | 39% |",
        "Source: sales.csv. Totals in whole euros.",
        '<instructions from="project" source="<project>/AGENTS.md">',
        "- sales-report: Write the team's sales report",
        "the same bytes without AGENTS.md: True",
        "request 1: the system prompt says cents: False | the message: 'one'",
        "request 2: the system prompt says cents: True  | the message: '[ipy_agent: the standing instructions "
        "changed since the last request: <project>/AGENTS.md (edited).",
        "request 3: the system prompt says cents: True  | the message: 'three'",
        "system prompts of requests 2 and 3 identical: True",
        "[approval prompt] Bash {'command': 'rm sales.csv'",
        "mode: default | allow rules: []",
        "decision: deny by person | sales.csv still there: True",
        "token in the prompt: False | Connect to the warehouse with [redacted $WAREHOUSE_TOKEN].",
        "Instructions the next request carries, in the order the model reads them:",
        "  sales-report       .ipy_agent/skills",
        "malformed, not offered:",
        "SKILL.md does not start with YAML front matter",
        "project  - Round money to whole euros.",
        "notebook In this notebook, totals keep their cents.",
        "skipped with instructions=False: True",
        "trusted: False | warned: True",
        "trusted: True",
        "summary.md           denied   A PreToolUse hook blocked this Write call: Reports go in reports/, not summary.md.",
        "reports/summary.md   done     written",
        "summary.md on disk: False | reports/summary.md: True",
    ],
}


def outputs_text(nb: nbformat.NotebookNode) -> str:
    """Everything the cells printed or displayed as text, in order."""
    parts: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out["text"])
            elif "data" in out and "text/plain" in out["data"]:
                parts.append(out["data"]["text/plain"])
    return "".join(parts)


def images(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", []))


def execute(path: Path, monkeypatch: pytest.MonkeyPatch, config_dir: Path) -> nbformat.NotebookNode:
    # The kernel inherits this process's environment: offline, and with widgets as in JupyterLab.
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "IPY_AGENT_NONINTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(config_dir))  # MCP trust and user settings: not the person's
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("IPY_AGENT_COURSE_AUTOANSWER", "1")  # nobody clicks: answered as the scene says
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def executed(path: Path, monkeypatch: pytest.MonkeyPatch, config_dir: Path) -> nbformat.NotebookNode:
    """The notebook with its outputs: as the course build in IPY_AGENT_COURSE_SITE executed it,
    or executed here when no site is named."""
    site = os.environ.get("IPY_AGENT_COURSE_SITE")
    if not site:
        return execute(path, monkeypatch, config_dir)
    try:
        return course.executed_notebook(Path(site), path.name)
    except course.BuildError as e:
        pytest.fail(str(e), pytrace=False)


def test_there_are_notebooks_and_each_has_checks():
    names = [p.stem for p in NOTEBOOKS]
    assert names, f"no notebooks found in {EXAMPLES}"
    assert sorted(EXPECT) == names, "every notebook needs its checks in EXPECT, and every check its notebook"


@pytest.mark.kernel
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW else p for p in NOTEBOOKS],
    ids=[p.stem for p in NOTEBOOKS],
)
def test_notebook_runs_offline_and_shows_its_concepts(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    nb = executed(path, monkeypatch, tmp_path / "config")
    text = outputs_text(nb)
    position = 0
    for expected in EXPECT[path.stem]:
        found = text.find(expected, position)
        assert found >= 0, (
            f"{path.name}: expected {expected!r} after position {position} in the outputs; "
            f"it is {'earlier' if expected in text else 'missing'}"
        )
        position = found + len(expected)
    assert images(nb) >= 1, f"{path.name} drew no picture"
    assert "Ledger.__repr__ ran" not in text  # notebook 09: describing variables runs none of their code
    for failure in ("The agent crashed", "internal error"):
        assert failure not in text, f"{path.name}: {failure!r} in the outputs"


def committed(path: Path) -> str:
    """The notebook as the last commit has it (the working copy outside a git checkout).

    A person who runs the tour and saves it has outputs in the working copy; that is use, not
    a change to commit, and must not fail their test run."""
    try:
        done = subprocess.run(
            ["git", "show", f"HEAD:./{path.name}"],
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:  # no git here
        return path.read_text(encoding="utf-8")
    return done.stdout if done.returncode == 0 else path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_has_no_outputs(path: Path):
    nb = nbformat.reads(committed(path), as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert dirty == [], f"{path.name}: cells {dirty} carry outputs; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name} carries saved widget state; clear it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_opens_with_its_question_and_says_what_to_notice(path: Path):
    # Then come the exercises (tests/examples/test_exercises.py).
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and "**The question:**" in first.source, path.name
    assert any(c.cell_type == "markdown" and re.search(r"^## What to notice", c.source, re.M) for c in nb.cells), (
        path.name
    )
    source = "\n".join(c.source for c in nb.cells)
    assert "ANTHROPIC_API_KEY" in source, f"{path.name} should say how it runs with a real model"
    assert not re.search(r"https?://|\.\./", source), f"{path.name} points outside the repository"


def _one_prompt(tmp_path: Path) -> nbformat.NotebookNode:
    """A notebook whose `%agent` run asks once (an Edit of notes.txt), as a teaching notebook's does."""
    (tmp_path / "notes.txt").write_text("teh plan\n")
    (tmp_path / "scene.json").write_text(
        '{"turns": [[{"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "notes.txt"}}],'
        ' [{"type": "tool_use", "id": "e", "name": "Edit", "input": {"file_path": "notes.txt",'
        ' "old_string": "teh", "new_string": "the"}}], "Fixed."], "person": {"e": "allow"}}'
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext ipy_agent"),
        nbformat.v4.new_code_cell("%agent --script scene.json fix"),
    ]
    return nb


@pytest.mark.kernel
def test_without_the_course_setting_a_headless_prompt_waits_for_a_person(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Off by default: nbclient has no page and nobody clicks, so the prompt waits and the cell times out.
    from nbclient.exceptions import CellTimeoutError

    monkeypatch.delenv("IPY_AGENT_COURSE_AUTOANSWER", raising=False)
    monkeypatch.delenv("IPY_AGENT_NONINTERACTIVE", raising=False)
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    nb = _one_prompt(tmp_path)
    with pytest.raises(CellTimeoutError):
        NotebookClient(nb, timeout=15, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert (tmp_path / "notes.txt").read_text() == "teh plan\n"
    assert "answered automatically" not in outputs_text(nb)


@pytest.mark.kernel
def test_with_the_course_setting_the_prompt_is_answered_and_the_cell_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("IPY_AGENT_COURSE_AUTOANSWER", "1")
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    nb = _one_prompt(tmp_path)
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert (tmp_path / "notes.txt").read_text() == "the plan\n"
    text = outputs_text(nb)
    assert text.index("Prompts in this run are answered automatically for the course build") < text.index(
        "Allowed once"
    )
