"""`%agent_serve`: the open notebook served to outside agents (Claude Code, Codex) over MCP.

`%agent_serve` starts the conversation's server (`Agent.serve_mcp`, loop/mcp_serve.py) on
loopback and prints how to connect: the `claude mcp add` line and a Codex equivalent, with the
bearer token. In a kernel with widgets the cell then shows a live view: a row per outside call,
named by its client, and the prompts for the calls that ask, answered there (or, for an edit of
the open notebook, in the cell it changes). `%agent_serve --stop` stops it; so do the view's Stop
button, `%unload_ext` and the end of the kernel. Whichever stops it, the live view then becomes
a static record, as a finished `%agent` run's does: the outside calls' rows, and that serving
stopped with how many calls each client made (`McpServeHandle.stopped_text`).
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from .session import AgentSession

if TYPE_CHECKING:
    from ipy_agent.loop.agent import Agent
    from ipy_agent.ui.widgets import RunView

__all__ = ["ServeMagics"]

# text/plain of the live view: what a notebook saved while serving shows without the kernel.
SERVING_TEXT = (
    "ipy_agent serving this notebook to outside agents over MCP (the live view needs the kernel; "
    "a record replaces it when serving stops)"
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%agent_serve", add_help=False, exit_on_error=False)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--name", default="notebook", help="the server's name in the client's configuration")
    p.add_argument("--stop", action="store_true")
    return p


@magics_class
class ServeMagics(Magics):
    """`%agent_serve`, sharing the session of `%agent`."""

    def __init__(self, shell: Any, session: AgentSession) -> None:
        super().__init__(shell=shell)
        self.session = session

    @line_magic
    def agent_serve(self, line: str = "") -> None:
        """Serve this notebook to an outside agent over MCP: `%agent_serve [--port N] [--name NAME]`,
        `%agent_serve --stop`. Its calls follow this conversation's rules, mode and cell policies,
        and ask you here."""
        try:
            args, rest = _parser().parse_known_args(shlex.split(line))
        except (argparse.ArgumentError, ValueError) as e:
            raise UsageError(f"%agent_serve: {e}") from None
        if rest:
            raise UsageError(f"%agent_serve: unknown arguments {' '.join(rest)!r}")
        agent = self.session.agent
        if args.stop:
            if agent is None or agent.served is None or agent.served.stopped:
                print("The notebook is not being served.")
                return
            served = agent.served
            served.stop()
            agent.served = None
            print(served.stopped_text())
            return
        if agent is None:
            agent = self.session.configured_agent()
            self.session.agent = agent
        view = self._view(agent, f"serving this notebook to outside agents ({args.name})")
        handle = agent.serve_mcp(
            args.host,
            args.port,
            approver=view.approver if view is not None else None,
            listener=view.listener if view is not None else None,
        )
        from ipy_agent.loop.mcp_serve import connect_lines

        claude, codex = connect_lines(handle, args.name)
        print(f"Serving this notebook over MCP at {handle.url} (bearer token required; keep it private).")
        print("Claude Code:\n  " + claude)
        print("Codex:\n  " + codex)
        if view is None:
            print("No prompts can be shown here: calls that ask are answered by the agent's approver, or denied.")
            return
        print("Calls that ask are asked here, as the agent's own are; %agent_serve --stop ends it.")
        from IPython.display import display

        view.handle = display(view.live_bundle(SERVING_TEXT), raw=True, display_id=True)
        handle.on_stop(lambda: view.end(handle.stopped_text()))  # the record replaces the live view

    def _view(self, agent: Agent, serving: str) -> RunView | None:
        """A live view for the outside calls in this cell (their rows and prompts), when widgets
        can be shown; None otherwise."""
        if getattr(self.shell, "kernel", None) is None or not self.session.settings().widgets:
            return None
        from ipy_agent.ui.run_ui import noninteractive_env

        if noninteractive_env():
            return None
        try:
            from ipy_agent.ui.widgets import RunView
        except ImportError:
            return None

        def stop() -> None:
            if agent.served is not None:
                agent.served.stop()
                agent.served = None

        return RunView(agent, background=True, on_stop=stop, serving=serving)
