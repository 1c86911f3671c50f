"""How a call's status and time look to the person: one table for every view.

The widget rows, the terminal rows and `%agent_inspect` show the same icon and words for a
status, so a person who learnt one view reads the others. Words are what a person (and a screen
reader) gets, the icon is a glance. Icons come from blocks every common UI font has (a pause
sign showed as an empty box).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from ipy_agent.runtime.trace import CallRecord, CallStatus

__all__ = ["STATUS", "StatusLook", "call_time", "format_duration", "status_look"]


@dataclass(frozen=True, kw_only=True)
class StatusLook:
    icon: str
    words: str
    colour: str  # CSS, for the widgets
    style: str  # rich style, for the terminal (named colours read on any terminal theme)


STATUS: dict[CallStatus, StatusLook] = {
    "queued": StatusLook(icon="○", words="queued", colour="gray", style=""),
    "waiting": StatusLook(icon="●", words="waiting for you", colour="#d08700", style="cyan"),
    "running": StatusLook(icon="◔", words="running", colour="#2f81f7", style=""),
    "done": StatusLook(icon="✓", words="done", colour="#2ea043", style="green"),
    "error": StatusLook(icon="✗", words="error", colour="#f85149", style="red"),
    "denied": StatusLook(icon="⊘", words="denied", colour="#f85149", style="yellow"),
    "cancelled": StatusLook(icon="■", words="cancelled", colour="gray", style="dim"),
}


def status_look(status: str) -> StatusLook:
    return STATUS.get(cast(CallStatus, status)) or StatusLook(icon="?", words=status, colour="inherit", style="")


def format_duration(seconds: float | None, *, precise: bool = False) -> str:
    """ "340 ms" or "2.5 s" for a row; `precise`: always milliseconds with a decimal (the trace)."""
    if seconds is None:
        return ""
    if precise:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def call_time(record: CallRecord) -> str:
    """A row's time: the call's own, with the time it waited for the person said apart
    ("120 ms · you answered after 4.7 s"), so minutes at a prompt never read as a slow tool."""
    total = record.duration
    if total is None:
        return ""
    waited = record.waited
    if waited <= 0:
        return format_duration(total)
    own = format_duration(max(0.0, total - waited))
    answered = record.decision is not None
    return f"{own} · {'you answered after' if answered else 'waited for you'} {format_duration(waited)}"
