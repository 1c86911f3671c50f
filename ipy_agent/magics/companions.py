"""The companion magics: look into a conversation, steer it, and see its rules and servers.

`%agent` (run.py) runs requests; these show what happened and what is in force without running
the model: one call in full (`%agent_inspect`), a turn's stages over time (`%agent_trace`), the
history (`%agent_history`), the context window (`%agent_context`), the tools and rules
(`%agent_tools`, `%agent_rules`), MCP servers (`%agent_mcp`), background commands (`%agent_tasks`), the standing instructions and the
skills (`%agent_instructions`, `%agent_skills`); and they act on the conversation: stop a run,
compact, reset, save. The text they print is built elsewhere (ui/inspection.py,
context/report.py, mcp/report.py, standing.py); these parse the line and print it.
They hold the same `AgentSession` (session.py) as `%agent`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

from .session import AgentSession

if TYPE_CHECKING:
    from ipy_agent.runtime.trace import AgentEvent

__all__ = ["CompanionMagics"]


@magics_class
class CompanionMagics(Magics):
    """The magics beside `%agent`, sharing its session."""

    def __init__(self, shell: Any, session: AgentSession) -> None:
        super().__init__(shell=shell)
        self.session = session

    @line_magic
    def agent_stop(self, line: str = "") -> None:
        """Stop a --background run; the history stays valid.

        A run in the foreground holds its cell, so this magic would only run after it: stop
        that one with the Stop button in its cell or the kernel's interrupt (the ■ button)."""
        if not self.session.stop():
            print(
                "No agent run is in progress. (A run in the foreground is stopped with the Stop button in its "
                "cell or the kernel's interrupt; %agent_stop stops --background runs.)"
            )
            return
        print("Stopping the agent…")

    @line_magic
    def agent_tools(self, line: str = "") -> None:
        """The tools the model would be offered now, their safety flags, why others are hidden,
        and every permission rule with the place it came from."""
        from ipy_agent.ui.inspection import tools_text

        agent = self.session.configured_agent()
        print(tools_text(agent))

    @line_magic
    def agent_inspect(self, line: str = "") -> None:
        """%agent_inspect [N | tool_use_id]: one call in full (default: the last one).

        Shows the full tool_result the model received beside the compact line the person saw,
        the permission decision, and the read-state entry the call touched."""
        from ipy_agent.ui.inspection import inspect_text

        try:
            print(inspect_text(self.session.need_agent(), line.strip() or None))
        except LookupError as e:
            raise UsageError(str(e)) from None

    @line_magic
    def agent_trace(self, line: str = "") -> None:
        """%agent_trace [N]: each call of turn N (default: the last turn with calls), its stages
        with durations and decisions, and a picture of the batches over time."""
        from ipy_agent.ui.inspection import trace_text

        text = line.strip()
        if text and not text.isdigit():
            raise UsageError(f"%agent_trace takes a turn number, not {text!r}")
        try:
            print(trace_text(self.session.need_agent(), int(text) if text else None))
        except LookupError as e:
            raise UsageError(str(e)) from None

    @line_magic
    def agent_history(self, line: str = "") -> None:
        """The conversation so far, one compact line per block."""
        from ipy_agent.ui.inspection import history_text

        print(history_text(self.session.need_agent()))

    @line_magic
    def agent_context(self, line: str = "") -> None:
        """What fills the context window: system prompt, tools, messages, tool results, by size,
        with a bar picture and the share used. See also %agent_compact."""
        from ipy_agent.context.report import context_report

        agent = self.session.need_agent()
        print(context_report(agent.context_manager))
        if budget := agent.managed.describe():
            print(f"Budget: {budget} (spent so far; the run stops before a request at a limit).")

    @line_magic
    def agent_compact(self, line: str = "") -> None:
        """%agent_compact [instructions]: summarise the older turns now, keeping the recent ones.

        The instructions say what the summary must keep, e.g. `%agent_compact keep the failing test names`."""
        agent = self.session.need_agent()
        if agent.running:
            raise UsageError("The agent is running; stop it first with %agent_stop.")
        from ipy_agent.runtime.trace import ContextEvent

        cm = agent.context_manager
        events: list[AgentEvent] = []
        agent.on_event(events.append)
        try:
            done = cm.compact_now(line.strip())
        finally:
            agent.remove_listener(events.append)
        if not done:
            print(f"Not compacted: {cm.last_refusal}.")
            return
        event = next(e for e in reversed(events) if isinstance(e, ContextEvent))
        print(f"{event.text[:1].upper()}{event.text[1:]}.")

    @line_magic
    def agent_rewind(self, line: str = "") -> None:
        """%agent_rewind [N] [--force]: back to just before prompt N (its number in
        %agent_history; default: the last). Files the agent edited, created or deleted, the open
        notebook's cells, variables its cell runs rebound, the conversation and what it had read
        go back; what you changed since is kept and named (--force overrides); files shell
        commands changed are listed. In a notebook the cell awaits it, so the page can answer."""
        from ipy_agent.base.threads import run_to_end

        from .rewind import rewind_command, show_rewind

        show_rewind(run_to_end(lambda: rewind_command(self.session, line, live=False), interrupt=lambda: None))

    @line_magic
    def agent_tasks(self, line: str = "") -> None:
        """The commands the agent started in the background: id, state, runtime, command."""
        from ipy_agent.ui.inspection import tasks_text

        print(tasks_text(self.session.configured_agent()))

    @line_magic
    def agent_reset(self, line: str = "") -> None:
        """Forget the conversation, read state and trace, and stop its background commands.
        Configuration stays, and so do the rules
        you granted with "Always allow" (for the kernel session; %agent_rules lists them)."""
        agent = self.session.need_agent()
        if agent.running:
            raise UsageError("The agent is running; stop it first with %agent_stop.")
        agent.reset()
        agent.close()  # MCP servers stop; they start again at the next run
        print(" ".join(p for p in ("Conversation cleared.", self.session.grants.note()) if p))

    @line_magic
    def agent_rules(self, line: str = "") -> None:
        """%agent_rules [--revoke RULE]: the rules you granted with "Always allow", and where.

        Grants last for the kernel session: %agent --new and %agent_reset keep them. --revoke
        takes one back (the next call it covered asks again). %agent_tools lists every rule."""
        text = line.strip()
        if not text:
            agent = self.session.agent
            print(self.session.grants.listing(agent.rules if agent else None, agent.cwd if agent else None))
            if agent is not None and (lines := agent.managed.policy.describe()):
                print("\n".join(lines))
            return
        if not text.startswith("--revoke"):
            raise UsageError(f"%agent_rules takes no argument or --revoke RULE, not {text!r}")
        rule = text[len("--revoke") :].strip().strip("'\"")
        if not rule:
            raise UsageError("%agent_rules --revoke needs a rule, e.g. `%agent_rules --revoke Bash(git status:*)`")
        try:
            self.session.grants.revoke(rule, self.session.agent.rules if self.session.agent else None)
        except KeyError:
            known = ", ".join(self.session.grants.sources) or "none"
            raise UsageError(f'{rule!r} is not a rule granted with "Always allow" (granted: {known})') from None
        print(f"Revoked {rule}: calls it covered will ask again.")

    @line_magic
    def agent_mcp(self, line: str = "") -> None:
        """MCP servers: where each is configured, its transport and status (why it is down, with
        its last stderr lines), and its tools with their safety flags. Servers start at the first
        %agent run; a project's servers (.mcp.json) ask for your approval once.
        `%agent_mcp logout NAME` removes an HTTP server's OAuth tokens: it asks you to sign in again."""
        from ipy_agent.mcp.report import status_text

        agent = self.session.configured_agent()
        words = line.split()
        if words and words[0] == "logout":
            if len(words) != 2:
                raise UsageError("%agent_mcp logout needs one server name, e.g. `%agent_mcp logout github`")
            had = agent.mcp.logout(words[1])
            print(
                f"Signed out of {words[1]!r}: its tokens were removed."
                if had
                else f"No tokens were kept for {words[1]!r}."
            )
            return
        if words:
            raise UsageError(f"%agent_mcp takes no argument but `logout NAME`, not {line.strip()!r}")
        print(status_text(agent.mcp, agent.exposure().hidden))

    @line_cell_magic
    def agent_instructions(self, line: str = "", cell: str | None = None) -> None:
        """%agent_instructions [--show]: the instructions every request carries, where each came
        from and its size; --show prints them as the model reads them.

        They come from your own ~/.config/ipy_agent/AGENTS.md, the project's AGENTS.md and
        CLAUDE.md (from the repository's root down to the working directory) and the notebook's
        own: `%agent_instructions --notebook TEXT` sets those (saved in the notebook's metadata),
        `--notebook` alone shows them, `--notebook --clear` removes them; `%%agent_instructions
        --notebook` takes them from the cell. `%agent --no-instructions` skips them for one run."""
        from ipy_agent.base.threads import run_to_end

        from .standing import instructions_command

        # In a kernel the cell awaits the command instead (cell_runner.py), which asks the live
        # notebook; here (terminal IPython, or called from code) the notebook's file is used.
        print(run_to_end(lambda: instructions_command(self.session, line, cell, live=False), interrupt=lambda: None))

    @line_magic
    def agent_skills(self, line: str = "") -> None:
        """The skills the model may load with the Skill tool: each one's name, where it was found
        and what it is for; skills another of the same name hides; malformed ones, with why."""
        from .standing import skills_report

        if line.strip():
            raise UsageError(f"%agent_skills takes no argument, not {line.strip()!r}")
        print(skills_report(self.session.configured_agent()))

    @line_magic
    def agent_save(self, line: str = "") -> None:
        """%agent_save PATH: write the conversation and the rules granted with "always" as JSON.

        Continue it later (in this or another kernel) with `%agent --resume PATH [request]`."""
        path = line.strip().strip("'\"")
        if not path:
            raise UsageError("%agent_save needs a file name, e.g. `%agent_save conversation.json`")
        from ipy_agent.config.conversation_file import save_conversation

        agent = self.session.need_agent()
        try:
            save_conversation(agent, path)
        except OSError as e:
            raise UsageError(f"could not write {path!r}: {e}") from None
        print(f"Saved {len(agent.messages)} messages to {path}.")
