"""ContextManager: keeps every request inside the model's context window, before it is sent.

The agent calls `stream(request)` in place of `model.stream(request)`; that is the only place
the conversation's size is managed. Before the request goes out:

1. Size: the estimate is the settled part's running total (context/ledger.py) plus the last
   message, the system prompt and the tools, scaled by what the API last reported. Near the
   threshold a model that can count (`count_tokens`) is asked once, so nothing is cleared on a
   wrong guess.
2. Clear: over the threshold, the oldest tool results become short notes (context/clearing.py)
   until the request is well under it; the most recent results stay.
3. Compact: still over, the older turns are summarised by the model (context/compaction.py),
   after the PreCompact hooks had their say.

If the API still answers "prompt is too long", the conversation is compacted and the request
sent once more. Every request (a summary, that retry) passes the run's meter (runtime/meter.py). Whatever is cleared or compacted away is also forgotten by the read state, so an
edit of a file the model can no longer see needs a fresh Read.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from ipy_agent.base.threads import run_to_end
from ipy_agent.contract.hooks import HookEvent
from ipy_agent.history.blocks import ContentBlock, JsonObject, ToolSpec
from ipy_agent.history.messages import history_problems
from ipy_agent.models.base import CountsTokens, Discovers, MessageComplete, ModelError, ModelEvent, ModelRequest
from ipy_agent.models.pricing import context_window
from ipy_agent.runtime.conversation import Conversation
from ipy_agent.runtime.trace import ContextEvent, NoticeEvent

from .clearing import clear_note, cleared_block, content_chars
from .compaction import (
    COMPACTION_SYSTEM,
    choose_split,
    summary_message,
    summary_requests,
)
from .ledger import Ledger
from .tokens import content_tokens, message_tokens, request_tokens, text_tokens, tools_tokens

__all__ = ["CompactTrigger", "ContextManager", "RequestSize"]

# "auto": over the threshold; "too_long": the API refused the request; "manual": `%agent_compact`.
CompactTrigger = Literal["auto", "manual", "too_long"]

CLEAR_DOWN_TO = 0.75  # clearing goes on until the estimate is below this share of the threshold
KEEP_VERBATIM = 0.25  # compaction keeps at most this share of the window verbatim


@dataclass(frozen=True, kw_only=True)
class RequestSize:
    """What the manager estimated for one request it let through."""

    raw: int  # the local estimate
    tokens: int  # scaled by the calibration factor: what the decisions use
    window: int


class ContextManager:
    def __init__(
        self,
        conversation: Conversation,
        *,
        window: int | None = None,
        threshold: float = 0.8,
        keep_results: int = 3,
        count_with_api: bool = True,
    ) -> None:
        if window is not None and window < 1_000:
            raise ValueError(f"context_window must be at least 1000 tokens, not {window!r}")
        if not 0.1 <= threshold <= 1.0:
            raise ValueError(
                f"context_threshold must be between 0.1 and 1.0 (a share of the window), not {threshold!r}"
            )
        self.conversation = conversation
        self.window_override = window
        self.threshold = threshold
        self.keep_results = keep_results
        self.count_with_api = count_with_api
        self.factor = 1.0  # real tokens / local estimate, learned from a real model's reports
        self.ledger = Ledger(self._result_source, self._use_source)
        self.sizes: list[RequestSize] = []  # one per request sent (for tests and %agent_context)
        self.cleared = self.compactions = self.api_counts = 0
        self.seconds = 0.0  # time spent deciding (the bench reads it)
        self._fixed: tuple[Any, int] = ((), 0)
        self._sent_raw = 0
        self._spills: dict[str, str] = {}
        self._trace_seen, self.last_refusal = 0, ""
        self._no_count: set[int] = set()  # models whose count failed
        self._discovered: set[int] = set()  # models asked about their server (Discovers)

    @property
    def name(self) -> str:
        """The model's name: the manager stands in for the model where the agent streams a reply."""
        return self.conversation.model.name

    def reset(self) -> None:
        """A new conversation: forget its accounting and counters (the settings stay)."""
        self.factor = 1.0
        self.ledger.reset()
        self.sizes.clear()
        self.cleared = self.compactions = self.api_counts = 0
        self.seconds = 0.0
        self._spills, self._trace_seen, self._sent_raw, self.last_refusal = {}, 0, 0, ""

    # --- sizes -----------------------------------------------------------------------------
    @property
    def window(self) -> int:
        if self.window_override is not None:
            return self.window_override
        model = self.conversation.model
        own = getattr(model, "context_window", None)
        if isinstance(own, int) and own > 0:
            return own
        return context_window(str(getattr(model, "name", "") or ""))

    @property
    def trigger(self) -> int:
        return int(self.window * self.threshold)

    def _fixed_tokens(self, system: str, tools: list[ToolSpec]) -> int:
        key = (system, tuple(str(t.get("name")) for t in tools))
        if self._fixed[0] != key:
            self._fixed = (key, text_tokens(system) + tools_tokens(tools))
        return self._fixed[1]

    def _raw(self, system: str, tools: list[ToolSpec]) -> int:
        messages = self.conversation.messages
        self.ledger.sync(messages)
        last = message_tokens(messages[-1]) if messages else 0
        return self._fixed_tokens(system, tools) + self.ledger.tokens + last

    def _scaled(self, raw: int) -> int:
        return math.ceil(raw * self.factor)

    def _learn(self, real: int, raw: int) -> None:
        if real > 0 and raw > 0:
            self.factor = min(2.5, max(0.5, real / raw))

    def estimate(self, system: str, tools: list[ToolSpec]) -> int:
        """Tokens the next request would take (the estimate the decisions use)."""
        return self._scaled(self._raw(system, tools))

    # --- the one entry point ---------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """`model.stream(request)`, with the context made to fit first and one retry on too-long."""
        request = await self.prepare(request)
        retried = False
        while True:
            started = False
            try:
                model, tokens = self.conversation.model, self._scaled(self._sent_raw)  # the retry: metered too
                async for event in self.conversation.meter.stream(model, request, input_tokens=tokens):
                    started = True
                    if isinstance(event, MessageComplete) and event.measured:
                        self._learn(event.usage.context_tokens, self._sent_raw)
                    yield event
                return
            except ModelError as err:
                if getattr(err, "kind", "") != "context_too_long" or started:
                    raise
                if retried:
                    raise ModelError(
                        f"{err} The conversation was compacted once already and is still too long; start a new "
                        "conversation (`%agent --new`), or remove large content from the latest messages.",
                        kind="context_too_long",
                    ) from err
                retried = True
                # The API counted at least a window's worth: our estimate was low by that much.
                if self._sent_raw:
                    self.factor = max(self.factor, min(2.5, self.window * 1.05 / self._sent_raw))
                done = await self.compact(trigger="too_long")
                if not done:
                    raise ModelError(
                        f"{err} Compacting the conversation was not possible ({self.last_refusal}).",
                        kind="context_too_long",
                    ) from err
                request = replace(request, messages=list(self.conversation.messages))
                self._sent_raw = self._raw(request.system, request.tools)

    async def prepare(self, request: ModelRequest) -> ModelRequest:
        """Clear, then compact, until the request is under the threshold; the request to send."""
        model = self.conversation.model
        if isinstance(model, Discovers) and id(model) not in self._discovered:
            self._discovered.add(id(model))
            await model.discover()  # its window, before the first request is sized
        started = time.perf_counter()
        raw = self._raw(request.system, request.tools)
        tokens = self._scaled(raw)
        changed = False
        if tokens > self.trigger and self._can_count():
            tokens = await self._count(request, raw)
        if tokens > self.trigger:
            changed = self._clear(request, keep=self.keep_results)
            tokens = self.estimate(request.system, request.tools)
        if tokens > self.trigger:
            self.seconds += time.perf_counter() - started
            changed = await self.compact(trigger="auto", system=request.system, tools=request.tools) or changed
            started = time.perf_counter()
            tokens = self.estimate(request.system, request.tools)
        if tokens > self.trigger:
            # Last resort before the API refuses: the recent results go too (never the newest
            # message's, which the model has not seen yet).
            changed = self._clear(request, keep=0) or changed
        raw = self._raw(request.system, request.tools)
        self._sent_raw = raw
        self.sizes.append(RequestSize(raw=raw, tokens=self._scaled(raw), window=self.window))
        self.seconds += time.perf_counter() - started
        return replace(request, messages=list(self.conversation.messages)) if changed else request

    # --- counting ----------------------------------------------------------------------------
    def _can_count(self) -> bool:
        model = self.conversation.model
        return self.count_with_api and isinstance(model, CountsTokens) and id(model) not in self._no_count

    async def _count(self, request: ModelRequest, raw: int) -> int:
        model = self.conversation.model
        assert isinstance(model, CountsTokens)  # _can_count said so
        try:
            real = await model.count_tokens(replace(request, messages=list(self.conversation.messages)))
        except Exception as e:  # counting is an optimisation; the local estimate stands
            self._no_count.add(id(model))  # asked once per model: a platform that cannot count never will
            self.conversation.emit(
                NoticeEvent(text=f"Token counting failed ({e}); using the local estimate.", level="info")
            )
            return self._scaled(raw)
        self.api_counts += 1
        self._learn(int(real), raw)
        return int(real)

    # --- clearing ----------------------------------------------------------------------------
    def _result_source(self, name: str, tool_input: JsonObject, tool_use_id: str) -> tuple[str, ...]:
        """What a result shows: the tool's answer from its input (Read's file), and the keys the
        call noted as shown while it ran (NotebookRead's cells)."""
        tool = self.conversation.tool(name)
        key = tool.result_source(tool_input, self.conversation.cwd) if tool is not None else None
        shown = self.conversation.read_state.shown_by(tool_use_id)
        return (key, *shown) if key is not None else shown

    def _use_source(self, name: str, tool_input: JsonObject) -> str | None:
        tool = self.conversation.tool(name)
        return tool.input_source(tool_input, self.conversation.cwd) if tool is not None else None

    def _clear(self, request: ModelRequest, *, keep: int, trigger: str = "auto") -> bool:
        ledger = self.ledger
        goal = self.trigger * CLEAR_DOWN_TO
        before = self.estimate(request.system, request.tools)
        tokens, count = before, 0
        spilled = self._spilled()
        protected = ledger.tail_sources(self.conversation.messages[-1] if self.conversation.messages else None)
        messages = self.conversation.messages
        while tokens > goal and len(ledger.results) > keep:
            entry = ledger.results.popleft()
            message = messages[entry.position] if entry.position < len(messages) else None
            content = message.get("content") if message is not None else None
            if message is None or not isinstance(content, list) or entry.index >= len(content):
                continue
            block = content[entry.index]
            if (
                not isinstance(block, dict)
                or block["type"] != "tool_result"
                or str(block.get("tool_use_id")) != entry.tool_use_id
            ):
                continue  # the message was changed behind our back; leave it alone
            note = clear_note(
                name=entry.name,
                tool_input=entry.input,
                chars=content_chars(block),
                spilled_to=spilled.get(entry.tool_use_id),
                reads_file=bool(entry.sources),
            )
            new = cleared_block(block, note)
            delta = content_tokens([block]) - content_tokens([new])
            changed: list[ContentBlock] = list(content)
            changed[entry.index] = new
            ledger.replace(messages, entry.position, {**message, "content": changed})
            ledger.tokens -= delta
            tokens -= math.ceil(delta * self.factor)
            count += 1
            for key in entry.sources:
                ledger.sources[key] -= 1
                if ledger.sources[key] <= 0 and key not in protected:
                    del ledger.sources[key]
                    self.conversation.read_state.forget(key)
        if not count:
            return False
        self.cleared += count
        after = self.estimate(request.system, request.tools)
        self.conversation.emit(ContextEvent(action="cleared", before=before, after=after, count=count, trigger="auto"))
        return True

    def _spilled(self) -> dict[str, str]:
        """tool_use_id -> spill file, kept up to date from the new end of the trace only."""
        trace = self.conversation.trace
        if len(trace) < self._trace_seen:  # the trace was reset
            self._spills, self._trace_seen = {}, 0
        for rec in trace[self._trace_seen :]:
            if rec.spilled_to:
                self._spills[rec.tool_use_id] = rec.spilled_to
        self._trace_seen = len(trace)
        return self._spills

    # --- compaction --------------------------------------------------------------------------
    async def compact(
        self,
        *,
        trigger: CompactTrigger = "manual",
        instructions: str = "",
        system: str | None = None,
        tools: list[ToolSpec] | None = None,
    ) -> bool:
        """Summarise the older turns into one message; True if the history was compacted.

        `trigger`: "auto" (over the threshold), "too_long" (the API refused), "manual"
        (`%agent_compact`). Why it did not happen is in `last_refusal`."""
        conversation = self.conversation
        messages = conversation.messages
        if system is None or tools is None:
            system, tools = self.conversation.request_parts()
        before = self.estimate(system, tools)
        # Automatic compaction keeps a quarter of the window verbatim; asked for by the person, or
        # after the API refused, only the latest exchange stays.
        split = choose_split(messages, self.window * KEEP_VERBATIM if trigger == "auto" else 0, self.factor)
        if split is None:
            return self._refuse("there are no earlier turns to summarise", trigger)
        extra = [instructions] if instructions.strip() else []
        if conversation.hooks.has("PreCompact"):
            outcome = await conversation.hooks.run(
                HookEvent(
                    event="PreCompact",
                    trigger="manual" if trigger == "manual" else "auto",
                    instructions=instructions or None,
                )
            )
            if outcome.decision == "deny" or outcome.stop:
                return self._refuse(f"a PreCompact hook blocked it: {outcome.reason or 'no reason given'}", trigger)
            extra += list(outcome.additional_context)
        summary, long = "", trigger == "too_long"
        for request in summary_requests(messages, split, extra, system, tools, before, self.window, long):
            try:
                summary = await self._summarise(request)
            except ModelError as e:
                if e.kind == "context_too_long" and request.system != COMPACTION_SYSTEM:
                    continue  # the estimate was short: the transcript form fits
                if e.kind == "budget_exceeded" and trigger != "manual":
                    raise  # the run ends at the budget, with the meter's words
                return self._refuse(f"the summary request failed: {e}", trigger)
            if summary.strip():
                break
        if not summary.strip():
            return self._refuse("the model returned an empty summary", trigger)
        if conversation.messages is not messages or len(messages) < split:
            return self._refuse("the conversation changed while it was being summarised", trigger)
        new = [summary_message(summary, split), *messages[split:]]
        if problems := history_problems(new):
            return self._refuse(f"the compacted history would be invalid ({problems[0]})", trigger)
        messages[:] = new
        self.ledger.reset()
        visible = self.ledger.visible_sources(messages)
        for key in list(conversation.read_state.keys()):
            if key not in visible:
                conversation.read_state.forget(key)
        self.compactions += 1
        self.last_refusal = ""
        after = self.estimate(system, tools)
        conversation.emit(ContextEvent(action="compacted", before=before, after=after, count=split, trigger=trigger))
        return True

    def _refuse(self, why: str, trigger: CompactTrigger) -> bool:
        repeated = trigger != "manual" and why == self.last_refusal
        self.last_refusal = why
        if repeated:  # said once is enough; an automatic attempt is made before every request
            return False
        self.conversation.emit(
            NoticeEvent(
                text=f"The conversation was not compacted: {why}.", level="info" if trigger == "manual" else "warning"
            )
        )
        return False

    async def _summarise(self, request: ModelRequest) -> str:
        final: MessageComplete | None = None
        tokens = self._scaled(request_tokens(request.system, request.tools, request.messages))  # for its hold
        async for event in self.conversation.meter.stream(self.conversation.model, request, input_tokens=tokens):
            if isinstance(event, MessageComplete):
                final = event
        if final is None:
            raise ModelError("the model stream ended without a complete message")
        self.conversation.usage += final.usage
        return "\n".join(str(b.get("text", "")) for b in final.content if b.get("type") == "text")

    def compact_now(self, instructions: str = "") -> bool:
        """`compact(trigger="manual")` from synchronous code (a magic), with or without a running loop."""
        if self.conversation.running:
            raise RuntimeError("the agent is running; stop it (or wait for it) before compacting")
        # A Ctrl-C meanwhile does not cut a summary half-way: the history changes only at its end.
        done = run_to_end(lambda: self.compact(trigger="manual", instructions=instructions), interrupt=lambda: None)
        return bool(done)
