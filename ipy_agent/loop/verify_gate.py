"""The verify gate: a run that changed the notebook checks it reproduces before it may end.

With `verify_before_done` (`Agent(verify_before_done=True)`, `%agent --verify`,
`%config AgentMagics.verify_before_done = True`), when a run that edited, inserted or ran a cell
of the notebook is about to end its turn (the model answered without a tool call and no Stop hook
objected), the runtime calls NotebookVerify once, through the same lifecycle as the model's calls
(rules, modes, hooks, the prompt, cell policies), and hands its report to the model in a message
of its own. The model then fixes what does not reproduce or explains it, and the run ends at its
next answer. The verdict ("reproduces", or what does not) is the run's `RunResult.verified`, the
call's record in the trace, and a notice in the cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ipy_agent.history.blocks import Message, ToolResultBlock
from ipy_agent.history.messages import append_user
from ipy_agent.runtime.executor import ToolExecutor
from ipy_agent.runtime.trace import AgentEvent, CallRecord, NoticeEvent

__all__ = ["CHANGES_NOTEBOOK", "VERIFY_TOOL", "VerifyGate", "changed_notebook"]

VERIFY_TOOL = "NotebookVerify"
CHANGES_NOTEBOOK = ("NotebookEdit", "NotebookRun")  # an edit, an insert, a run


@dataclass
class VerifyGate:
    """One run's gate: the run's first turn, and whether it has verified (once per run)."""

    first_turn: int = 1
    verdict: str | None = None

    def begin(self, turns_before: int) -> None:
        self.first_turn, self.verdict = turns_before + 1, None

    async def check(
        self,
        *,
        enabled: bool,
        trace: Sequence[CallRecord],
        turn: int,
        executor: ToolExecutor,
        messages: list[Message],
        emit: Callable[[AgentEvent], None],
    ) -> bool:
        """Run NotebookVerify when the run should verify before it ends; True: the run goes on
        (the model has the report to answer)."""
        if not enabled or self.verdict is not None or not changed_notebook(trace, self.first_turn):
            return False
        tool_use_id = f"toolu_verify_gate_{turn}"
        executor.submit({"type": "tool_use", "id": tool_use_id, "name": VERIFY_TOOL, "input": {}})
        (block,) = await executor.results()
        record = next((r for r in reversed(trace) if r.tool_use_id == tool_use_id), None)
        text = _text(block)
        if record is not None and record.status == "done" and not record.is_error:
            self.verdict = record.summary_result or "verified"
            intro = "Before this run ends, the runtime checked that the notebook reproduces (the verify gate)."
        else:
            self.verdict = f"not verified: {(record.summary_result if record else '') or text[:120]}"
            intro = "Before this run ends, the runtime tried to check that the notebook reproduces, and could not."
        emit(
            NoticeEvent(
                text=f"Verify: {self.verdict}", level="info" if self.verdict.startswith("reproduces") else "warning"
            )
        )
        ask = (
            "It reproduces; finish your answer."
            if self.verdict.startswith("reproduces")
            else "Fix what does not reproduce (NotebookEdit, NotebookRun), or tell the person what it is and why; "
            "then finish. The check runs once per run."
        )
        append_user(
            messages, [{"type": "text", "text": f"<system-reminder>\n{intro}\n{text}\n\n{ask}\n</system-reminder>"}]
        )
        return True


def changed_notebook(trace: Sequence[CallRecord], first_turn: int) -> bool:
    """A call of this run edited, inserted or ran a cell."""
    return any(r.turn >= first_turn and r.tool_name in CHANGES_NOTEBOOK and r.status == "done" for r in trace)


def _text(block: ToolResultBlock) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or [] if b.get("type") == "text")
