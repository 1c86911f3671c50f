"""ScriptedModel: an offline model that replays turns, for tests, examples and teaching.

It speaks the same protocol as the Anthropic client, so everything the loop does with a real
model (streaming text, handing each finished tool_use block to the executor early) can be shown
and tested without network or key. The turns come from a list or a transcript file
(models/transcript.py: plain replies, recorded replies with their usage and timing, and
branches on how the previous tool calls ended); a transcript recorded from a real session
(models/recording.py) replays the same way, and stops with a clear message where the run no
longer matches it.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from ipy_agent.history.blocks import ContentBlock, JsonObject, Message, TextBlock, ToolSpec
from ipy_agent.history.tool_ids import HistoryIds, TakenIds

from .base import BlockComplete, MessageComplete, ModelError, ModelEvent, ModelRequest, TextDelta, Usage
from .transcript import (
    Divergence,
    Reply,
    TranscriptTurn,
    as_reply,
    check_expected,
    check_turn,
    choose_branch,
    load_transcript,
)

__all__ = ["KeptRequest", "ScriptedModel"]

# A transcript's turn, or a callable that is given the conversation so far and returns one.
Turn = TranscriptTurn | Callable[[list[Message]], TranscriptTurn]


class KeptRequest(TypedDict):
    """A request as the scripted model was shown it (for tests to assert on)."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec]


_FINAL_TEXT = "(The scripted model has no more turns.)"
COMPACTION_SUMMARY = (
    "(Scripted summary.) The person asked for work in this notebook; the agent used its tools on "
    "their files. No decisions or open tasks were recorded by the scripted model."
)


class ScriptedModel:
    """Replays `turns` in order, one per request.

    Each turn is one of the forms of a transcript (models/transcript.py):

    - a plain string (one text block), or a list of content blocks in Anthropic format;
    - a recorded reply `{"reply": ..., "stop_reason": ..., "usage": ..., "timing": ...,
      "expect": [...]}`: its usage and stop reason are replayed, and `expect` is checked: when
      the previous turn's tool results differ from the recording (a file changed, a call now
      denied), the request fails with a ModelError (kind "replay_diverged") that says where,
      with a diff of the results, instead of going on with replies that no longer fit;
    - a branch `{"when": {"allowed": [...], "denied": [...], "error": [...]}}`: the turns to
      play depend on how the previous turn's tool calls ended ("denied" when any was denied,
      else "error" when any failed, else "allowed"); the chosen turns are played in place of
      the branch, then the list goes on. An outcome the branch leaves out stops the replay
      the same way, naming the answer the transcript expected;

    or a callable that receives the conversation so far and returns a string or blocks. When
    the turns run out, it ends the turn with a short text. `pace` replays recorded timing: 1.0
    at the recorded speed, 0 (default) as fast as possible. The last `keep_requests` requests
    (system, messages, tools; default 100, None keeps all) are kept in `requests` so tests can
    assert what the model was shown: a copy of the request's list (the agent hands over its
    history itself), sharing the messages, which the agent never changes in place.
    `keep_requests=0` keeps none and copies nothing.

    A compaction request (`request.purpose == "compaction"`) is answered with the transcript's
    next `compactions` entry, else `compaction_summary`, and kept in `compactions` instead: it
    uses no scripted turn.
    """

    offline = True  # costs nothing: the UI shows no price for it
    provider = "scripted"

    def __init__(
        self,
        turns: Sequence[Turn] | None = None,
        *,
        name: str = "scripted",
        block_delay: float = 0.0,
        chunk_size: int = 40,
        keep_requests: int | None = 100,
        compaction_summary: str = COMPACTION_SUMMARY,
        summaries: list[str] | None = None,
        pace: float = 0.0,
        provenance: JsonObject | None = None,
        person: dict[str, str] | None = None,
    ) -> None:
        if keep_requests is not None and keep_requests < 0:
            raise ValueError(f"keep_requests must be at least 0 or None, not {keep_requests!r}")
        if pace < 0:
            raise ValueError(f"pace must be 0 or more, not {pace!r}")
        for i, turn in enumerate(turns or []):
            check_turn(turn, f"scripted turn {i}")
        self.turns: list[Turn] = list(turns or [])
        self.compaction_summary = compaction_summary
        self.summaries = list(summaries or [])  # recorded summaries, used before compaction_summary
        self.compactions: list[KeptRequest] = []
        self.name = name
        self.block_delay = block_delay
        self.chunk_size = chunk_size
        self.keep_requests = keep_requests
        self.pace = pace
        self.provenance = dict(provenance or {})
        self.person = dict(person or {})  # the scene's answers by tool_use id (models/transcript.py)
        self.requests: list[KeptRequest] = []
        self._sizes = _SizeCache()
        self._history_ids = HistoryIds()  # ids already in the conversation, counted once each
        # Per-block completion times (loop clock), for tests and the streaming bench.
        self.block_times: list[tuple[str, float]] = []
        self._next = 0
        self._played = 0  # replies given, branches expanded
        self._pending: list[Turn] = []  # the turns of a chosen branch, played before self.turns go on
        self._ids = 0

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedModel:
        """Load a transcript (models/transcript.py: `{"turns": [...]}`, with optional
        "compactions" and "provenance"); ValueError says what is wrong with it."""
        p = Path(path)
        transcript = load_transcript(p)
        kwargs.setdefault("summaries", transcript.compactions)
        kwargs.setdefault("provenance", transcript.provenance)
        kwargs.setdefault("person", transcript.person)
        return cls(transcript.turns, name=kwargs.pop("name", f"scripted:{p.name}"), **kwargs)

    @property
    def remaining(self) -> int:
        return len(self._pending) + max(0, len(self.turns) - self._next)

    def _take_turn(self, request: ModelRequest) -> Reply:
        while True:
            if self._pending:
                turn = self._pending.pop(0)
            elif self._next < len(self.turns):
                turn = self.turns[self._next]
                self._next += 1
            else:
                return Reply(blocks=[{"type": "text", "text": _FINAL_TEXT}])
            where = f"Reply {self._played + 1} of the transcript {self.name!r}"
            if callable(turn):
                turn = turn(copy.deepcopy(request.messages))
                check_turn(turn, f"scripted turn {self._played}")
            if isinstance(turn, dict) and "when" in turn:
                self._pending[:0] = choose_branch(turn["when"], request.calls, where)
                continue
            self._played += 1
            reply = as_reply(turn)
            if reply.expect is not None:
                check_expected(reply.expect, request.messages, request.calls, request.places, where)
            return reply

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "compaction":
            self.compactions.append(
                {"system": request.system, "messages": list(request.messages), "tools": request.tools}
            )
            await asyncio.sleep(0)
            text = self.summaries.pop(0) if self.summaries else self.compaction_summary
            summary: TextBlock = {"type": "text", "text": text}
            yield BlockComplete(block=summary.copy(), index=0)
            yield MessageComplete(
                content=[summary],
                stop_reason="end_turn",
                model=self.name,
                usage=Usage(input_tokens=1, output_tokens=max(1, len(text) // 4)),
                measured=False,
            )
            return
        if self.keep_requests != 0:
            # The history goes on growing after this request: keep the list as it was sent.
            self.requests.append({"system": request.system, "messages": list(request.messages), "tools": request.tools})
            if self.keep_requests is not None and len(self.requests) > self.keep_requests:
                del self.requests[: len(self.requests) - self.keep_requests]
        try:
            reply = self._take_turn(request)
        except Divergence as e:
            raise ModelError(f"The replay stopped. {e}", kind="replay_diverged") from None
        loop = asyncio.get_running_loop()
        content: list[ContentBlock] = []
        # A tool_use id is unique within a conversation (the API's ids are). A transcript replayed
        # twice in one conversation repeats its ids, and `%agent_history` / `%agent_inspect ID`
        # would then mix up the calls: a repeated id gets a suffix.
        used = TakenIds(self._history_ids.synced(request.messages))
        elapsed = 0.0
        for index, block in enumerate(reply.blocks):
            given = reply.delays[index] if index < len(reply.delays) else None
            delay = given if given is not None else self.block_delay
            if index < len(reply.timing) and self.pace:
                delay, elapsed = max(0.0, reply.timing[index] - elapsed) * self.pace, reply.timing[index]
            if block["type"] == "tool_use":
                if not block.get("id"):
                    self._ids += 1
                    block["id"] = f"toolu_scripted_{self._ids:04d}"
                block["id"] = _unique(str(block["id"]), used)
                block.setdefault("input", {})
            if block["type"] == "text":
                text = str(block.get("text", ""))
                step = max(1, self.chunk_size)
                for start in range(0, len(text), step):
                    yield TextDelta(text=text[start : start + step])
            if delay:
                await asyncio.sleep(delay)
            else:
                await asyncio.sleep(0)
            content.append(block)
            self.block_times.append((str(block.get("id") or block.get("type")), loop.time()))
            yield BlockComplete(block=copy.deepcopy(block), index=index)
        stop = reply.stop_reason or ("tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn")
        if reply.usage is not None:
            yield MessageComplete(content=content, stop_reason=stop, usage=reply.usage, model=reply.model or self.name)
            return
        chars = self._sizes.total(request.messages) + len(request.system)
        usage = Usage(input_tokens=chars // 4, output_tokens=max(1, len(json.dumps(content)) // 4))
        yield MessageComplete(content=content, stop_reason=stop, usage=usage, model=self.name, measured=False)


class _SizeCache:
    """The JSON size of a history, measuring only the messages that are new since last time.

    The agent's history grows at the end and replaces (never edits) its last message, so what
    was measured stays valid up to the last message that is still the same object; a reset or
    a resumed conversation walks back to the start and is measured afresh."""

    def __init__(self) -> None:
        self._seen: list[Message] = []
        self._sizes: list[int] = []
        self._total = 0

    def total(self, messages: list[Message]) -> int:
        same = min(len(self._seen), len(messages))
        while same and messages[same - 1] is not self._seen[same - 1]:
            same -= 1
        if same < len(self._seen):
            self._total -= sum(self._sizes[same:])
            del self._seen[same:], self._sizes[same:]
        for m in messages[same:]:
            size = len(json.dumps(m))
            self._seen.append(m)
            self._sizes.append(size)
            self._total += size
        return self._total


def _unique(tool_use_id: str, used: TakenIds) -> str:
    """`tool_use_id`, or it with the first free suffix `_2`, `_3`, ...; the result joins `used`."""
    candidate, n = tool_use_id, 1
    while candidate in used:
        n += 1
        candidate = f"{tool_use_id}_{n}"
    used.add(candidate)
    return candidate
