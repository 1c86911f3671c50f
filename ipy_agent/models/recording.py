"""RecordingModel: a real session written down as a transcript that ScriptedModel replays.

It wraps any model and passes its stream on unchanged; after each reply it writes the whole
transcript again (to a temporary file renamed over the old one, so a crash leaves the last
complete version): every reply with its blocks, stop reason, usage, model and timing, what the
previous turn's tool calls gave (`expect`, which the replay checks), and, after a turn whose
calls a person (or an approver) answered, the reply inside a branch on that answer
(`{"when": {"denied": [...]}}`): the format is models/transcript.py's. Compaction summaries are
kept in `compactions`. Credentials never reach the file: the values of secret-looking
environment variables (base/secrets.py) and anything shaped like an API key or token are
redacted, and the run's directories become placeholders (`<cwd>`, `<spill>`).

`lesson_model(path)` is what a teaching notebook asks for: the transcript replayed offline, a
real model online, and with IPY_AGENT_RECORD=1 (set by `python -m ipy_agent.magics.rerecord`)
the real model recording into `path`.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ipy_agent.base.secrets import redact_data
from ipy_agent.history.blocks import JsonObject, ToolResultBlock
from ipy_agent.history.messages import as_blocks

from .base import BlockComplete, CallOutcome, MessageComplete, Model, ModelEvent, ModelRequest, model_label
from .transcript import Expected, RecordedReply, TranscriptTurn, outcome_of, result_text

__all__ = ["RECORD_ENV", "RecordingModel", "lesson_model", "recording_into", "redact_keys", "swap_model"]

RECORD_ENV = "IPY_AGENT_RECORD"
# Shapes of credentials, redacted wherever they appear (even when no variable holds them).
_KEY_SHAPES = re.compile(
    r"sk-ant-[\w-]{16,}|sk-(?:proj-)?[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|ya29\.[\w.-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|(?i:bearer\s+)[\w.~+/-]{20,}"
)


def redact_keys(data: Any) -> Any:
    """JSON-like `data` with secret environment values and key-shaped strings redacted."""
    data = redact_data(data)
    if isinstance(data, str):
        return _KEY_SHAPES.sub("[redacted key]", data)
    if isinstance(data, list):
        return [redact_keys(x) for x in data]
    if isinstance(data, dict):
        return {k: redact_keys(v) for k, v in data.items()}
    return data


class RecordingModel:
    """`model`, with every reply written to the transcript at `path` (started afresh).

    `how`: how to record it again, kept in the provenance (e.g. the command that made it).
    Everything else (name, provider, context window, cost, counting) is the wrapped model's."""

    def __init__(self, model: Model, path: str | Path, *, how: str = "") -> None:
        self.model = model
        self.path = Path(path)
        self.turns: list[TranscriptTurn] = []
        self.compactions: list[str] = []
        self.provenance: JsonObject = {
            "kind": "recorded",
            "model": model_label(model),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "how": how or f"%agent --record {self.path.name}",
        }
        self.write()

    @property
    def name(self) -> str:
        return self.model.name

    def use(self, model: Model) -> None:
        """Go on recording with another model (the provenance names the latest)."""
        self.model = model
        self.provenance["model"] = model_label(model)

    def __getattr__(self, attribute: str) -> Any:
        # provider, context_window, cost, count_tokens, discover, offline: the wrapped model's
        # (an attribute it lacks stays missing, so the protocols it does not offer stay off).
        if attribute.startswith("__") or attribute == "model":
            raise AttributeError(attribute)
        return getattr(self.model, attribute)

    def __repr__(self) -> str:
        return f"RecordingModel({self.model!r}, {str(self.path)!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        started = time.monotonic()
        timing: list[float] = []
        final: MessageComplete | None = None
        async for event in self.model.stream(request):
            if isinstance(event, BlockComplete):
                timing.append(round(time.monotonic() - started, 3))
            elif isinstance(event, MessageComplete):
                final = event
            yield event
        if final is None:
            return
        if request.purpose == "compaction":
            self.compactions.append("".join(str(b.get("text", "")) for b in final.content if b.get("type") == "text"))
        else:
            self.turns.append(self._turn(request, final, timing))
        self.write()

    def _turn(self, request: ModelRequest, final: MessageComplete, timing: list[float]) -> TranscriptTurn:
        turn: RecordedReply = {
            "reply": final.content,
            "stop_reason": final.stop_reason,
            "usage": asdict(final.usage),
            "model": final.model,
            "timing": timing,
        }
        last = request.messages[-1] if request.messages else None
        blocks = as_blocks(last["content"]) if last is not None else []
        words = "\n".join(str(b.get("text", "")) for b in blocks if b["type"] == "text").strip()
        if words and last is not None and last["role"] == "user":
            turn["request"] = words[:500]
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results:
            by_id = {c.tool_use_id: c for c in request.calls}
            turn["expect"] = [self._expected(b, by_id, request.places) for b in results]
        asked = [c for c in request.calls if c.asked]
        outcome = outcome_of(request.calls)
        if asked and outcome is not None:
            return {"when": {outcome: [turn]}}
        return turn

    @staticmethod
    def _expected(
        block: ToolResultBlock, by_id: dict[str, CallOutcome], places: tuple[tuple[str, str], ...]
    ) -> Expected:
        call = by_id.get(str(block.get("tool_use_id")))
        outcome = call.outcome if call is not None else ("error" if block.get("is_error") else "allowed")
        text = result_text(block)
        for placeholder, path in sorted(places, key=lambda p: -len(p[1])):
            if path:
                text = text.replace(path, placeholder)
        return {"name": call.name if call is not None else "?", "outcome": outcome, "result": text}

    def write(self) -> None:
        """The transcript so far, replacing the file whole."""
        data = redact_keys({"provenance": self.provenance, "turns": self.turns, "compactions": self.compactions})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)


def recording_into(model: Model, path: str | Path, *, how: str = "") -> RecordingModel:
    """`model` recording into `path`: a model already recording there goes on; one recording
    elsewhere records here from now on."""
    if isinstance(model, RecordingModel):
        if model.path == Path(path):
            return model
        model = model.model
    return RecordingModel(model, path, how=how)


def swap_model(current: Model, new: Model) -> Model:
    """The model to use after `new` is chosen: a recording goes on, with `new` inside."""
    if isinstance(current, RecordingModel) and not isinstance(new, RecordingModel):
        current.use(new)
        return current
    return new


def lesson_model(path: str | Path, *, online: bool | None = None, model: Model | str | None = None) -> Model:
    """The model of a teaching notebook that ships the transcript `path`.

    Offline (the default without ANTHROPIC_API_KEY) the transcript is replayed. `online` (or a
    key in the environment) gives a real model: `model` (a Model or a `--model` name), else
    IPY_AGENT_MODEL, else the newest Sonnet. With IPY_AGENT_RECORD=1 in the environment
    (`python -m ipy_agent.magics.rerecord NOTEBOOK` sets it) that real model records into
    `path`, replacing the transcript."""
    recording = os.environ.get(RECORD_ENV, "") == "1"
    if online is None:
        online = recording or bool(os.environ.get("ANTHROPIC_API_KEY"))
    if not online and not recording:
        from .scripted import ScriptedModel

        return ScriptedModel.from_file(path)
    if isinstance(model, str) or model is None:
        from .providers import model_from_spec

        model = model_from_spec(model or os.environ.get("IPY_AGENT_MODEL", ""))
    if recording:
        return RecordingModel(model, path, how=os.environ.get("IPY_AGENT_RECORD_HOW", ""))
    return model
