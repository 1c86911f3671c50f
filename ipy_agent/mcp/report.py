"""The text of `%agent_mcp`: each server, where it was configured, how it connects, its state
(with why it is down and its last stderr lines), and its tools with their safety flags."""

from __future__ import annotations

from typing import Any

from ipy_agent.base.secrets import redact

from .manager import McpManager
from .prompts import prompt_usage

__all__ = ["status_text"]


def _table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def status_text(manager: McpManager, hidden: dict[str, str] | None = None) -> str:
    """`hidden`: tool name -> why the registry does not offer it (a deny rule)."""
    hidden = hidden or {}
    configs = manager.configs
    if not configs:
        return (
            'No MCP servers are configured. Add them to .mcp.json ({"mcpServers": {"name": {"command": ..., '
            '"args": [...]}}}), to .ipy_agent/settings.json, or pass Agent(mcp_servers=...).'
        )
    rows: list[tuple[str, ...]] = [("server", "from", "transport", "status", "tools")]
    details: list[str] = []
    tools = {t.name: t for t in manager.tools()}
    for name, cfg in configs.items():
        conn = manager.connection(name)
        status: str = conn.status if conn is not None else "not started"
        if status in ("stopped", "not started"):
            status = {"declined": "not started: declined", "needs approval": "not started: needs approval"}.get(
                manager.trust_state(cfg), "not started (starts at the next run)"
            )
        where = f"{cfg.source}: {cfg.origin}" if cfg.source != "code" else "code"
        transport = f"stdio: {cfg.describe()}" if cfg.transport == "stdio" else f"http: {cfg.url}"
        if len(transport) > 60:
            transport = transport[:59] + "…"
        mine = [t for t in tools.values() if getattr(t, "server", None) == name]
        rows.append((name, where, transport, status, str(len(mine)) if conn is not None and conn.tools else "-"))
        if conn is not None and conn.status == "down":
            details.append(f"{name} is down: it {conn.reason}")
        if mine:
            table: list[tuple[str, ...]] = [("tool", "read-only", "parallel", "destructive", "offered")]
            for t in mine:
                blank: Any = t.input_model.model_construct()
                offered = "no: " + hidden[t.name] if t.name in hidden else "yes"
                table.append(
                    (
                        t.name,
                        _yes(t.is_read_only(blank)),
                        _yes(t.is_concurrency_safe(blank)),
                        _yes(t.is_destructive(blank)),
                        offered,
                    )
                )
            details.append(f"Tools of {name}:")
            details += _table(table)
    for server, prompts in manager.prompt_listing().items():
        if prompts:
            details.append(f"Prompts of {server} (run one as a prompt: %agent /mcp__{server}__<prompt> args):")
            details += _table([(prompt_usage(server, p), str(p.get("description") or "")[:80]) for p in prompts])
    if servers := manager.resource_servers():
        details.append(
            f"Resources: {', '.join(servers)} (the model lists them with ListMcpResourcesTool; "
            "attach one to a prompt with @server:uri)"
        )
    lines = ["MCP servers:", *_table(rows)]
    skipped = [f"  {tool}: {why}" for tool, why in manager.skipped.items()]
    if skipped:
        details += ["Tools not offered:", *skipped]
    if details:
        lines += ["", *details]
    lines += ["", "Rules: allow/ask/deny 'mcp__<server>' covers all of a server's tools, 'mcp__<server>__<tool>' one."]
    return redact("\n".join(lines))  # %agent_mcp's output is saved with the notebook
