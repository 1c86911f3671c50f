"""`%load_ext ipy_agent` and `%unload_ext ipy_agent`: what the extension adds to a shell and takes away.

Loading registers `AgentMagics` (run.py), attaches the live-notebook bridge in a kernel
(notebook/bridge.py), and installs the input transformer that lets a cell await its run
(magics/cell_runner.py). Unloading removes all of it, stops a running agent and its MCP servers, so
no process outlives the extension.
"""

from __future__ import annotations

from typing import Any

from .cell_runner import agent_transformer, current_magics, terminal_transformer
from .run import AgentMagics

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(shell: Any) -> None:
    if "AgentMagics" not in shell.magics_manager.registry:
        shell.register_magics(AgentMagics(shell=shell))
    kernel = getattr(shell, "kernel", None)
    magics = current_magics(shell)
    if kernel is not None and magics.bridge is None:
        from ipy_agent.notebook.bridge import NotebookBridge

        bridge = NotebookBridge(shell)
        try:
            bridge.attach(kernel)
        except Exception as e:  # no comm support in this kernel: the live notebook stays off
            bridge.problem = f"the live notebook is unavailable in this kernel ({type(e).__name__}: {e})"
        magics.bridge = bridge
    transformer = agent_transformer if getattr(shell, "kernel", None) is not None else terminal_transformer
    if transformer not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(transformer)


def unload_ipython_extension(shell: Any) -> None:
    magics = shell.magics_manager.registry.pop("AgentMagics", None)
    if magics is not None:
        for kind, table in magics.magics.items():
            for name in table:
                shell.magics_manager.magics[kind].pop(name, None)
        if magics.current is not None and magics.current.running:
            magics.current.interrupt()
        if magics.current is not None:
            magics.current.close()  # no MCP server outlives the extension
        if magics in getattr(shell, "configurables", []):
            shell.configurables.remove(magics)
    for transformer in (agent_transformer, terminal_transformer):
        while transformer in shell.input_transformers_cleanup:
            shell.input_transformers_cleanup.remove(transformer)
