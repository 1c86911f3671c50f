"""`%load_ext ipy_agent` and `%unload_ext ipy_agent`: what the extension adds to a shell and takes away.

Loading registers `AgentMagics` (run.py) and the companion magics (companions.py) around one
session (session.py), attaches the live-notebook bridge in a kernel (notebook/bridge.py), and
installs the input transformer that lets a cell await its run (cell_runner.py). Unloading
removes all of it, stops a running agent and its MCP servers, so no process outlives the
extension. Loading twice is harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .cell_runner import agent_transformer, terminal_transformer
from .companions import CompanionMagics
from .plugins import PluginMagics
from .run import AgentMagics
from .serve import ServeMagics
from .verify import VerifyMagics

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(shell: InteractiveShell) -> None:
    registry = shell.magics_manager.registry
    if "AgentMagics" not in registry:
        magics = AgentMagics(shell=shell)
        shell.register_magics(magics)
        shell.register_magics(CompanionMagics(shell, magics.session))
        shell.register_magics(ServeMagics(shell, magics.session))
        shell.register_magics(PluginMagics(shell, magics.session))
        shell.register_magics(VerifyMagics(shell, magics.session))
    session = registry["AgentMagics"].session
    kernel = getattr(shell, "kernel", None)
    if kernel is not None and session.bridge is None:
        from ipy_agent.notebook.bridge import NotebookBridge

        from .todo_human import GoOnAfterTodo

        bridge = NotebookBridge(shell)
        bridge.runs.watch(shell)
        bridge.runs.listeners.append(GoOnAfterTodo(session))  # a TODO(human) cell's run goes on
        try:
            bridge.attach(kernel)
        except Exception as e:  # no comm support in this kernel: the live notebook stays off
            bridge.problem = f"the live notebook is unavailable in this kernel ({type(e).__name__}: {e})"
        session.bridge = bridge
    transformer = agent_transformer if kernel is not None else terminal_transformer
    if transformer not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(transformer)


def unload_ipython_extension(shell: InteractiveShell) -> None:
    registry = shell.magics_manager.registry
    for name in ("AgentMagics", "CompanionMagics", "ServeMagics", "PluginMagics", "VerifyMagics"):
        magics = registry.pop(name, None)
        if magics is None:
            continue
        for kind, table in magics.magics.items():
            for magic in table:
                shell.magics_manager.magics[kind].pop(magic, None)
        if isinstance(magics, AgentMagics):
            bridge = magics.session.bridge
            if bridge is not None:
                bridge.runs.unwatch()
                if bridge.guard is not None:
                    bridge.guard.uninstall(shell)  # comm_close takes ipykernel's own path again
            magics.session.close()  # no run and no MCP server outlives the extension
        if magics in getattr(shell, "configurables", []):
            shell.configurables.remove(magics)
    for transformer in (agent_transformer, terminal_transformer):
        while transformer in shell.input_transformers_cleanup:
            shell.input_transformers_cleanup.remove(transformer)
