"""Text views of what the runtime did: tools offered, one call in full, the trace, the history.

These exist so every concept is visible: which tools the model was offered and why others were
hidden, what the model received for a call beside the compact line the person saw, each call's
stages and the batches over time. They are plain functions of an `Agent` returning strings, so
they work from Python as well as through `%agent_tools`, `%agent_inspect`, `%agent_trace` and
`%agent_history`.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence

from ipy_agent.contract.read_state import ReadEntry
from ipy_agent.contract.tool import Tool, ToolStatus
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.loop.agent import Agent
from ipy_agent.models.base import model_label
from ipy_agent.models.recording import RecordingModel
from ipy_agent.permissions.rules import BUILTIN, builtin_listing
from ipy_agent.runtime.conversation import Conversation
from ipy_agent.runtime.trace import CallRecord, nested_calls

from .record import seen_lines
from .status import format_duration, status_look

__all__ = ["find_call", "flag_text", "history_text", "inspect_text", "tasks_text", "tools_text", "trace_text"]

PICTURE_WIDTH = 48
TRACE_WIDTH = 100  # characters per line of %agent_trace's stage lines


def flag_text(tool: Tool, flag: str) -> str:
    """'yes' / 'no', or 'per input' when the answer depends on the call's input.

    Flags are functions of the parsed input. We ask with an input that has only its defaults:
    a flag that reads a required field fails there, which means it depends on the input.
    """
    try:
        return "yes" if getattr(tool, f"_{flag}")(tool.input_model.model_construct()) else "no"
    except Exception:
        return "per input"


def tools_text(agent: Agent) -> str:
    exposure = agent.exposure()
    rows: list[tuple[str, ...]] = [("tool", "offered", "read-only", "parallel", "destructive", "from")]
    for tool in agent.tools:
        offered = "yes" if tool.name not in exposure.hidden else "hidden"
        rows.append(
            (
                tool.name,
                offered,
                flag_text(tool, "read_only"),
                flag_text(tool, "concurrency_safe"),
                flag_text(tool, "destructive"),
                tool_origin(tool),
            )
        )
    where = getattr(agent.model, "where", "") or ""
    recording = f", recording into {agent.model.path}" if isinstance(agent.model, RecordingModel) else ""
    lines = [f"Model: {model_label(agent.model)}" + (f" on {where}" if where else "") + recording, ""]
    lines.append(f"Tools the model would be offered now (mode {agent.permission_mode}, cwd {agent.cwd}):")
    lines += _table(rows)
    ctx = agent.tool_context()
    statuses = [status.text for tool in agent.tools if (status := _status(tool, ctx)) is not None]
    if statuses:
        lines += ["", *statuses]
    if exposure.hidden:
        lines.append("")
        lines.append("Hidden tools, and why:")
        lines += [f"  {name}: {why}" for name, why in exposure.hidden.items()]
    waiting = [n for n in agent.mcp.configs if agent.mcp.connection(n) is None]
    if waiting:
        lines.append("")
        lines.append(
            f"MCP servers not started yet (their tools appear after the next run; see %agent_mcp): {', '.join(waiting)}"
        )
    rules = [
        (kind, r.text, r.source)
        for kind in ("allow", "ask", "deny")
        for r in getattr(agent.rules, kind)
        if r.source != BUILTIN
    ]
    lines.append("")
    if rules:
        lines.append("Permission rules (deny beats ask beats allow):")
        lines += _table([("kind", "rule", "from"), *rules])
    else:
        lines.append("No permission rules of yours: the mode decides (read-only calls run, others ask).")
    if builtin := builtin_listing(agent.rules.deny, agent.rules.allow, agent.cwd):
        lines += ["", *builtin]
    return "\n".join(lines)


def _status(tool: Tool, ctx: ToolContext) -> ToolStatus | None:
    try:
        return tool.status(ctx)
    except Exception as e:  # a tool whose status fails still gets a line
        return ToolStatus(text=f"{tool.name}: its status failed ({type(e).__name__}: {e})", warning=True)


def tool_origin(tool: Tool) -> str:
    """Where a tool comes from: an MCP server (and its file), ipy_agent itself, or the caller."""
    if tool.origin:
        return tool.origin
    return "built-in" if type(tool).__module__.startswith(("ipy_agent.tools", "ipy_agent.loop")) else "custom"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def find_call(agent: Conversation, key: str | int | None = None) -> CallRecord:
    """A call by number (1 = the first call of the conversation), by tool_use_id, or the last."""
    trace: list[CallRecord] = agent.trace
    if not trace:
        raise LookupError("no tool calls yet in this conversation")
    if key is None or key == "":
        return trace[-1]
    text = str(key).strip().lstrip("#")
    if text.lstrip("-").isdigit():
        n = int(text)
        if not 1 <= n <= len(trace):
            raise LookupError(f"there is no call #{n}: this conversation has calls #1 to #{len(trace)}")
        return trace[n - 1]
    # The latest call with that id, as %agent_history pairs them (ids are unique in a conversation
    # the API made; a hand-written transcript may still repeat one).
    for rec in reversed(trace):
        if rec.tool_use_id == text:
            return rec
    for calls in _nested(agent).values():  # a subagent's call (a Task's)
        for rec in reversed(calls):
            if rec.tool_use_id == text:
                return rec
    raise LookupError(f"no call has tool_use_id {text!r}; %agent_trace lists the calls and their ids")


def _content_text(result: Mapping[str, object] | None) -> str:
    if result is None:
        return "(no result was recorded)"
    content = result.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for b in content if isinstance(content, list) else []:
        if b.get("type") == "text":
            parts.append(str(b.get("text", "")))
        else:
            src = b.get("source", {})
            parts.append(f"[{b.get('type')} block: {src.get('media_type', '')} {len(str(src.get('data', '')))} chars]")
    return "\n".join(parts)


def _read_entry(agent: Conversation, rec: CallRecord) -> ReadEntry | None:
    key = rec.read_state_key
    if key is None:
        tool = agent.tool(rec.tool_name)
        if tool is None:
            return None
        try:
            inp = tool.input_model.model_validate(rec.final_input or rec.input)
            subject = tool.rule_subject(inp, agent.tool_context())
        except Exception:
            subject = None
        if subject is None or subject.kind != "path":
            return None
        key = subject.value
    return agent.read_state.get(key)


def inspect_text(agent: Conversation, key: str | int | None = None) -> str:
    rec = find_call(agent, key)
    result_text = _content_text(rec.result)
    d = rec.duration
    lines = [
        f"Call #{rec.index + 1}: {rec.tool_name}  (tool_use_id {rec.tool_use_id}, turn {rec.turn}, batch {rec.batch})"
        + (f"\nMade by an outside MCP client: {rec.client}" if rec.client else ""),
        f"Status: {rec.status}" + (f", {format_duration(d, precise=True)}" if d is not None else ""),
        f"Input: {json.dumps(rec.final_input or rec.input, ensure_ascii=False)}",
    ]
    if rec.final_input is not None and rec.final_input != rec.input:
        lines.append(f"Input as the model sent it: {json.dumps(rec.input, ensure_ascii=False)}")
    if rec.decision is not None:
        lines.append(f"Permission: {rec.decision.behavior} ({rec.decision.source}: {rec.decision.reason})")
    lines += ["", "The person saw:", *(f"  {ln}" for ln in seen_lines(rec, status_look(rec.status).icon))]
    if rec.detail:
        lines += [f"  | {line}" for line in rec.detail.splitlines()[:40]]
    error = "  (is_error: true)" if rec.is_error else ""
    lines += ["", f"The model received (tool_result, {len(result_text)} chars){error}:"]
    lines += [f"  {line}" for line in result_text.splitlines()] or ["  (empty)"]
    if rec.spilled_to:
        lines.append(f"The full output was larger than the limit and was written to {rec.spilled_to}")
    entry = _read_entry(agent, rec)
    lines.append("")
    if entry is None:
        lines.append("Read state: no entry (this call touched no file the agent tracks)")
    else:
        span = f", lines {entry.offset or 1}+{entry.limit}" if entry.partial else ", whole file"
        digest = (entry.content_hash or "")[:12] or ("by stat" if entry.stamp else "none")
        lines.append(f"Read state: {entry.key}  hash {digest}, {entry.size} bytes{span}, recorded by {entry.source}")
    return "\n".join(lines)


def _stage_parts(rec: CallRecord) -> list[str]:
    parts = []
    for s in rec.stages:
        detail = f" ({s.detail})" if s.detail and s.name == "permission" else ""
        parts.append(f"{s.name} {s.outcome}{detail} {format_duration(s.duration, precise=True)}")
    return parts


def _wrap_stages(parts: list[str], width: int = TRACE_WIDTH) -> list[str]:
    """Stage texts joined by " · ", broken between stages (a terminal or a cell breaks long lines
    mid-word); a single stage longer than the width is wrapped at spaces."""
    lines: list[str] = []
    current = ""
    for part in parts:
        candidate = f"{current} · {part}" if current else part
        if current and len(candidate) + 4 > width:
            lines.append(current)
            current = part
        else:
            current = candidate
    if current:
        lines.append(current)
    out: list[str] = []
    for i, line in enumerate(lines):
        first = "    " if i == 0 else "      "
        out += textwrap.wrap(
            line,
            width=width,
            initial_indent=first,
            subsequent_indent="      ",
            break_long_words=False,
            break_on_hyphens=False,
        ) or [first]
    return out


def trace_text(agent: Conversation, turn: int | None = None) -> str:
    """Each call of one turn with its stages, and a picture of its batches over time.

    `turn` is a turn number of the conversation; by default the last turn that called tools.
    """
    trace: list[CallRecord] = agent.trace
    if not trace:
        return "No tool calls yet in this conversation."
    turns = sorted({r.turn for r in trace})
    turn = turns[-1] if turn is None else turn
    calls = [r for r in trace if r.turn == turn]
    if not calls:
        raise LookupError(f"turn {turn} made no tool calls; turns with calls: {', '.join(map(str, turns))}")
    batches = sorted({r.batch for r in calls})
    lines = [f"Turn {turn}: {len(calls)} call(s) in {len(batches)} batch(es)", ""]
    for r in calls:
        d = format_duration(r.duration, precise=True) or "-"
        lines.append(
            f"#{r.index + 1} {r.tool_name}{f' · via {r.client}' if r.client else ''} {r.summary_use}  "
            f"[batch {r.batch}, {r.status}, {d}]  {r.tool_use_id}"
        )
        lines += _wrap_stages(_stage_parts(r))
        for n in _nested(agent).get(r.tool_use_id, []):  # what its subagent did
            d = format_duration(n.duration, precise=True) or "-"
            lines.append(f"    ↳ {n.tool_name} {n.summary_use}  [{n.status}, {d}]  {n.tool_use_id}")
    lines += ["", *batch_picture(calls)]
    return "\n".join(lines)


def _nested(agent: Conversation) -> dict[str, list[CallRecord]]:
    session = getattr(agent, "session", None)
    return nested_calls(session) if isinstance(session, dict) else {}


def batch_picture(calls: list[CallRecord], width: int = PICTURE_WIDTH) -> list[str]:
    """One row per call on a shared time axis: '·' queued, '░' waiting for approval, '█' running."""
    t0 = min(r.queued_at for r in calls)
    t1 = max((r.end or r.start or r.queued_at) for r in calls)
    span = max(t1 - t0, 1e-6)

    def col(t: float) -> int:
        return min(width - 1, int((t - t0) / span * width))

    labels = [f"b{r.batch} #{r.index + 1} {r.tool_name}" for r in calls]
    pad = max(len(s) for s in labels)
    lines = [f"Batches over time (0 to {format_duration(span, precise=True)}; calls in one batch run together):"]
    for r, label in zip(calls, labels):
        cells = [" "] * width
        start = r.start if r.start is not None else t1
        for i in range(col(r.queued_at), col(start)):
            cells[i] = "·"
        if r.start is not None:
            for i in range(col(r.start), col(r.end or t1) + 1):
                cells[i] = "█"
            wait = r.stage("permission")
            # Asked: answered by a person or an approver, or cancelled while the prompt was open.
            asked = getattr(r.decision, "source", None) in ("person", "approver") or (
                r.decision is None and r.status == "cancelled"
            )
            if wait is not None and asked:
                for i in range(col(wait.start), col(wait.end or r.end or t1) + (0 if wait.end else 1)):
                    cells[i] = "░"
        lines.append(f"  {label.ljust(pad)} |{''.join(cells)}|")
    lines.append("  · queued behind an earlier batch   ░ waiting for approval   █ running")
    return lines


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def history_text(agent: Conversation) -> str:
    """The conversation, one line per block, with the person's view of each tool result."""
    if not agent.messages:
        return "The conversation is empty."
    by_id = {r.tool_use_id: r for r in agent.trace}
    # The message each prompt began (`%agent_rewind N` goes back to before prompt N).
    prompts = {len(cp.messages): cp.prompt for cp in agent.checkpoints.list}
    lines: list[str] = []
    for i, m in enumerate(agent.messages, 1):
        who = "you" if m["role"] == "user" else "agent"
        if i - 1 in prompts and m["role"] == "user":
            who = f"you (prompt {prompts[i - 1]})"
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in content:
            kind = b.get("type")
            if kind == "text":
                lines.append(f"[{i}] {who}: {_short(str(b.get('text', '')))}")
            elif kind == "tool_use":
                rec = by_id.get(str(b.get("id")))
                what = rec.summary_use if rec and rec.summary_use else _short(json.dumps(b.get("input", {})), 60)
                lines.append(f"[{i}] agent → {b.get('name')} {what}  ({b.get('id')})")
            elif kind == "tool_result":
                rec = by_id.get(str(b.get("tool_use_id")))
                if rec is not None:
                    seen = f"{status_look(rec.status).icon} {rec.summary_result}"
                else:
                    seen = ("✗ " if b.get("is_error") else "") + _short(_content_text(b), 80)
                lines.append(f"[{i}] result for {b.get('tool_use_id')}: {seen}")
            elif kind in ("thinking", "redacted_thinking"):
                lines.append(f"[{i}] agent (thinking)")
            else:
                lines.append(f"[{i}] {who}: [{kind} block]")
    return "\n".join(lines)


def tasks_text(agent: Conversation, *, now: float | None = None) -> str:
    """What the conversation's tools left running in the background (`%agent_tasks`): one line
    each with its id, state, runtime and what it runs."""
    import time

    ctx = agent.tool_context()
    now = time.time() if now is None else now
    lines = []
    for tool in agent.tools:
        for task in tool.background_tasks(ctx):
            took = (task.ended or now) - task.started
            what = task.description.splitlines()[0][:80] if task.description else ""
            lines.append(f"  {task.id:<10} {task.state:<10} {format_duration(took):>8}  {what}")
    if not lines:
        return "Nothing runs in the background. Bash starts a command there with `run_in_background: true`."
    return "\n".join(["Background tasks (id, state, runtime, command):", *lines])
