"""Transcripts: the file format `ScriptedModel` replays and `RecordingModel` writes.

A transcript is a JSON object:

    {"provenance": {"kind": "hand-written" | "recorded", "model": "...", "date": "...", ...},
     "turns": [TURN, ...],
     "compactions": ["summary", ...],
     "person": {"toolu_id": "allow" | "deny: reason" | "an option's label", ...}}

`turns` are the model's replies, one per request, in order. A TURN is one of:

- `"text"`: a reply of one text block;
- `[block, ...]`: content blocks in Anthropic format (text, tool_use, ...). A block may carry
  `"_delay"`: seconds before it completes (removed before it enters the history);
- `{"reply": "text" | [block, ...], ...}`: a reply with what was recorded about it:
  `"stop_reason"`, `"usage"` (the Usage fields), `"model"`, `"timing"` (seconds from the request
  to each block, replayed when a pace is set), `"request"` (the person's words it answered, for
  the reader) and `"expect"`: the results of the previous turn's tool calls as they were when
  recorded, `[{"name": "Read", "outcome": "allowed", "result": "text"}, ...]`. A replay whose
  results differ stops there and says how (see `check_expected`);
- `{"when": {"allowed": [TURN, ...], "denied": [TURN, ...], "error": [TURN, ...]}}`: a branch
  on how the previous turn's tool calls ended. "denied" when any call was denied (by a rule, a
  hook or the person), else "error" when any failed, else "allowed". The chosen list is played
  in place of the branch, then the turns after it follow. A branch may leave an outcome out; a
  replay that reaches it stops and says which answer the transcript expected.

`compactions` answer the requests for a summary of the conversation, in order (a default
summary when they run out). `provenance` says who made the file: "hand-written", or "recorded"
with the model, the date and how to record it again. `person` (optional) holds the person's
answers in the scene, by tool_use id: `"allow"`, `"deny"`, `"deny: a reason"`, or a question's
option label; only a run with `IPY_AGENT_COURSE_AUTOANSWER=1` gives them (ui/course_answers.py),
anywhere else the person answers. Anything else at the top is kept and ignored.

Tool results are compared as text after `normalize`: the run's own places (its working
directory, its spill directory: `ModelRequest.places`) become their placeholders, times of day
and durations become `<time>` and `<duration>`, and runs of blanks one space. So a recording
replays in another directory, on another day; a changed file content, a different error, or a
call that was allowed and is now denied, still stops the replay.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Required, TypedDict, final

from ipy_agent.history.blocks import ContentBlock, JsonObject, Message, ToolResultBlock, is_content_block, text_block

from .base import CallOutcome, Outcome, Usage

__all__ = [
    "OUTCOMES",
    "Branch",
    "Divergence",
    "Expected",
    "RecordedReply",
    "Reply",
    "Transcript",
    "TranscriptTurn",
    "as_reply",
    "check_expected",
    "check_turn",
    "choose_branch",
    "load_transcript",
    "normalize",
    "outcome_of",
    "result_text",
]

OUTCOMES: tuple[Outcome, ...] = ("allowed", "denied", "error")
_REPLY_KEYS = {"reply", "stop_reason", "usage", "model", "timing", "expect", "request"}
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds?|minutes?)\b")
_BLANKS = re.compile(r"\s+")


class Expected(TypedDict, total=False):
    """How a tool call of the previous turn ended when the reply was recorded."""

    name: str
    outcome: str
    result: str


@final
class RecordedReply(TypedDict, total=False):
    """A reply with what was recorded about it (see the module docstring)."""

    reply: Required[str | list[ContentBlock]]
    stop_reason: str
    usage: dict[str, int]
    model: str
    timing: list[float]
    expect: list[Expected]
    request: str


@final
class Branch(TypedDict):
    """The turns to play by how the previous turn's tool calls ended."""

    when: dict[str, str | list[TranscriptTurn]]


TranscriptTurn = str | list[ContentBlock] | RecordedReply | Branch


class Divergence(Exception):
    """A replay reached a point where the run no longer matches its transcript."""


@dataclass(kw_only=True)
class Transcript:
    turns: list[TranscriptTurn]
    compactions: list[str] = field(default_factory=list)
    provenance: JsonObject = field(default_factory=dict)
    # The person's answers in the scene, by tool_use id ("allow", "deny: reason", a question's
    # option label): what an auto-answered course build clicks (ui/course_answers.py).
    person: dict[str, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class Reply:
    """One turn made ready to stream: its blocks and what was recorded about it."""

    blocks: list[ContentBlock]
    stop_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    timing: list[float] = field(default_factory=list)
    expect: list[Expected] | None = None
    # Each block's `"_delay"` (seconds before it completes), taken off the block.
    delays: list[float | None] = field(default_factory=list)


def load_transcript(path: str | Path) -> Transcript:
    """Read and check a transcript file; ValueError (or FileNotFoundError) saying what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"transcript {str(p)!r} does not exist") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"transcript {str(p)!r} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise ValueError(f'transcript {str(p)!r} must be an object {{"turns": [...]}}')
    for i, turn in enumerate(data["turns"]):
        try:
            check_turn(turn, f"turn {i}")
        except ValueError as e:
            raise ValueError(f"transcript {str(p)!r}: {e}") from None
    compactions = data.get("compactions", [])
    if not isinstance(compactions, list) or not all(isinstance(c, str) for c in compactions):
        raise ValueError(f'transcript {str(p)!r}: "compactions" must be a list of summary strings')
    provenance = data.get("provenance", {})
    if not isinstance(provenance, dict):
        raise ValueError(f'transcript {str(p)!r}: "provenance" must be an object')
    person = data.get("person", {})
    if not isinstance(person, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in person.items()):
        raise ValueError(
            f'transcript {str(p)!r}: "person" must map tool_use ids to answers ("allow", "deny: reason", an option)'
        )
    return Transcript(turns=data["turns"], compactions=compactions, provenance=provenance, person=person)


def check_turn(turn: Any, where: str) -> None:
    """ValueError naming `where` when `turn` is not one of the TURN forms (branches included)."""
    if isinstance(turn, str | list) or callable(turn):
        if isinstance(turn, list) and not all(is_content_block(b) for b in turn):
            raise ValueError(f'{where} must be a list of content blocks (objects with a "type")')
        return
    if not isinstance(turn, dict):
        raise ValueError(
            f"{where} must be a string or a list of blocks (or a reply or branch object), not {type(turn).__name__}"
        )
    if "when" in turn:
        branches = turn["when"]
        if set(turn) != {"when"} or not isinstance(branches, dict) or not branches:
            raise ValueError(f'{where}: a branch is {{"when": {{"allowed": [...], "denied": [...], "error": [...]}}}}')
        for outcome, turns in branches.items():
            if outcome not in OUTCOMES:
                raise ValueError(f"{where}: a branch is chosen by {', '.join(OUTCOMES)}, not {outcome!r}")
            if isinstance(turns, str):
                continue
            if not isinstance(turns, list):
                raise ValueError(f"{where}: when.{outcome} must be a list of turns")
            for i, sub in enumerate(turns):
                check_turn(sub, f"{where} → when.{outcome} → turn {i}")
        return
    if "reply" not in turn:
        raise ValueError(f'{where}: an object turn is a reply {{"reply": ...}} or a branch {{"when": ...}}')
    unknown = set(turn) - _REPLY_KEYS
    if unknown:
        raise ValueError(
            f"{where}: a reply has no field {sorted(unknown)[0]!r} (fields: {', '.join(sorted(_REPLY_KEYS))})"
        )
    check_turn(turn["reply"], f"{where} → reply")
    if isinstance(turn["reply"], dict):
        raise ValueError(f"{where} → reply must be a string or a list of blocks")


def as_reply(turn: str | list[ContentBlock] | RecordedReply) -> Reply:
    """A plain or recorded turn as a Reply (blocks copied: the transcript stays as it is)."""
    meta: RecordedReply = turn if isinstance(turn, dict) else {"reply": turn}
    body = meta["reply"]
    blocks: list[ContentBlock] = []
    delays: list[float | None] = []
    for b in [text_block(body)] if isinstance(body, str) else body:
        copied: dict[str, object] = dict(b)
        delay = copied.pop("_delay", None)
        delays.append(float(delay) if isinstance(delay, int | float) else None)
        blocks.append(copied if is_content_block(copied) else b)
    usage = meta.get("usage")
    return Reply(
        blocks=blocks,
        delays=delays,
        stop_reason=meta.get("stop_reason"),
        usage=Usage(**{k: int(v) for k, v in usage.items() if k in Usage.__dataclass_fields__})
        if isinstance(usage, dict)
        else None,
        model=str(meta.get("model") or ""),
        timing=[float(t) for t in meta.get("timing") or []],
        expect=meta.get("expect"),
    )


def outcome_of(calls: tuple[CallOutcome, ...]) -> Outcome | None:
    """How the previous turn's calls ended, as one word (None: there were none)."""
    if not calls:
        return None
    outcomes = {c.outcome for c in calls}
    return "denied" if "denied" in outcomes else "error" if "error" in outcomes else "allowed"


def choose_branch(
    branches: Mapping[str, str | list[TranscriptTurn]], calls: tuple[CallOutcome, ...], where: str
) -> list[TranscriptTurn]:
    """The turns of the branch the previous calls chose; Divergence when the transcript has none."""
    outcome = outcome_of(calls)
    if outcome is not None and outcome in branches:
        chosen = branches[outcome]
        return [chosen] if isinstance(chosen, str) else list(chosen)
    has = " or ".join(branches)
    if outcome is None:
        raise Divergence(f"{where} branches on how the previous tool calls ended ({has}), but there were no calls.")
    why = "; ".join(f"{c.name} {c.outcome}" + (f" ({c.reason})" if c.reason else "") for c in calls)
    raise Divergence(
        f"{where} has a reply only when the previous calls were {has}, and this time they were {outcome}: {why}. "
        "The person (or a rule) answered differently from the recording."
    )


def result_text(block: ToolResultBlock) -> str:
    """The text of a tool_result block (images as a placeholder)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for b in content or []:
        if isinstance(b, dict):
            parts.append(str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type', 'block')}]")
    return "\n".join(parts)


def normalize(text: str, places: tuple[tuple[str, str], ...]) -> str:
    """`text` as compared across runs: places as their placeholders, no times or durations,
    blanks squeezed (see the module docstring)."""
    for placeholder, path in sorted(places, key=lambda p: -len(p[1])):
        if path:
            text = text.replace(path, placeholder)
    text = _DURATION.sub("<duration>", _TIME.sub("<time>", text))
    return _BLANKS.sub(" ", text).strip()


def check_expected(
    expect: list[Expected],
    messages: Sequence[Message],
    calls: tuple[CallOutcome, ...],
    places: tuple[tuple[str, str], ...],
    where: str,
) -> None:
    """Divergence, with a diff of the tool results, when the previous turn's calls did not end
    as they did in the recording."""
    last = messages[-1] if messages else None
    content = last["content"] if last is not None and last["role"] == "user" else None
    results = [b for b in content or [] if isinstance(b, dict) and b["type"] == "tool_result"]
    by_id = {c.tool_use_id: c for c in calls}
    for i, want in enumerate(expect):
        name = str(want.get("name", "?"))
        if i >= len(results):
            raise Divergence(f"{where}: the recording had a result for {name} (call {i + 1}), this run has none.")
        got = results[i]
        call = by_id.get(str(got.get("tool_use_id")))
        outcome = call.outcome if call is not None else ("error" if got.get("is_error") else "allowed")
        recorded, now = normalize(str(want.get("result", "")), places), normalize(result_text(got), places)
        wanted = str(want.get("outcome", outcome))
        if recorded == now and wanted == outcome:
            continue
        diff = "\n".join(
            difflib.unified_diff(
                str(want.get("result", "")).splitlines(),
                _with_placeholders(result_text(got), places).splitlines(),
                "recorded",
                "this run",
                lineterm="",
                n=2,
            )
        )
        changed = f" (it was {wanted}, now {outcome})" if wanted != outcome else ""
        raise Divergence(
            f"{where}: the result of {name} (call {i + 1} of the previous turn) differs from the recording{changed}:\n"
            f"{diff or '(the text is the same)'}"
        )


def _with_placeholders(text: str, places: tuple[tuple[str, str], ...]) -> str:
    for placeholder, path in sorted(places, key=lambda p: -len(p[1])):
        if path:
            text = text.replace(path, placeholder)
    return text
