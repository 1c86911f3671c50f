"""What MCP servers add to the person's prompt: a server's prompt run as `/mcp__server__prompt
args`, and a resource attached with `@server:uri`.

`/mcp__review__file src/app.py security` gets the server's prompt `file` with its arguments in
order (quoted as in a shell; `name=value` sets one by name) and sends its messages as the
person's prompt. `@docs:memo://notes` anywhere in a prompt reads that resource and attaches its
contents after the text (the mention stays in the text, so the model knows what it refers to).
A mention of a server that is not connected or has no resources is left as it is (an address).
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from ipy_agent.history.blocks import ContentBlock, JsonObject

from .connection import CallFailed, CallOutcome, ServerDown
from .resources import resource_parts
from .results import result_blocks

if TYPE_CHECKING:
    from .manager import McpManager

__all__ = ["PromptError", "expand_prompt", "mentions", "prompt_command", "prompt_usage"]

_COMMAND = re.compile(r"^\s*/mcp__(?P<server>[A-Za-z0-9_-]+?)__(?P<name>[^\s]+)(?:\s+(?P<args>.*))?$", re.S)
_MENTION = re.compile(r"(?<![\w@/])@(?P<server>[A-Za-z0-9_-]+):(?P<uri>[A-Za-z][A-Za-z0-9+.-]*:[^\s]+)")


class PromptError(Exception):
    """The prompt cannot be sent as written (an unknown MCP prompt, a missing argument)."""


def prompt_command(prompt: str) -> tuple[str, str, str] | None:
    """(server, prompt name, argument text) of a `/mcp__server__prompt args` prompt, or None."""
    m = _COMMAND.match(prompt)
    return (m["server"], m["name"], m["args"] or "") if m else None


def mentions(prompt: str) -> list[tuple[str, str]]:
    """(server, uri) of each `@server:uri` in the text, in order, each once."""
    seen: dict[tuple[str, str], None] = {}
    for m in _MENTION.finditer(prompt):
        seen[(m["server"], m["uri"].rstrip(".,;:!?)]'\""))] = None
    return list(seen)


def prompt_usage(server: str, prompt: JsonObject) -> str:
    """`/mcp__server__name <arg> [optional]`, as `%agent_mcp` lists it."""
    args = prompt.get("arguments")
    words = [f"/mcp__{server}__{prompt.get('name')}"]
    for a in args if isinstance(args, list) else []:
        if isinstance(a, dict):
            words.append(f"<{a.get('name')}>" if a.get("required") else f"[{a.get('name')}]")
    return " ".join(words)


def _arguments(prompt: JsonObject, text: str) -> dict[str, str]:
    declared = [a for a in prompt.get("arguments") or [] if isinstance(a, dict)]  # type: ignore[union-attr]
    names = [str(a.get("name")) for a in declared]
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise PromptError(f"its arguments could not be read ({e})") from None
    out: dict[str, str] = {}
    positional = [w for w in words if not (w.partition("=")[0] in names and "=" in w)]
    for w in words:
        key, eq, value = w.partition("=")
        if eq and key in names:
            out[key] = value
    free = [n for n in names if n not in out]
    if len(positional) > len(free):
        if not free:
            raise PromptError(f"it takes no more arguments, and got {positional[len(free) :]}")
        positional = [*positional[: len(free) - 1], " ".join(positional[len(free) - 1 :])]  # the rest to the last
    out.update(zip(free, positional, strict=False))
    missing = [str(a.get("name")) for a in declared if a.get("required") and str(a.get("name")) not in out]
    if missing:
        raise PromptError(f"it needs the argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return out


async def _run_prompt(manager: McpManager, server: str, name: str, text: str) -> list[ContentBlock]:
    usage = f"/mcp__{server}__{name}"
    listed = (await manager.list_prompts()).get(server)
    if listed is None:
        raise PromptError(f"{usage}: no connected MCP server {server!r} offers prompts (see %agent_mcp)")
    prompt = next((p for p in listed if p.get("name") == name), None)
    if prompt is None:
        known = ", ".join(prompt_usage(server, p) for p in listed) or "none"
        raise PromptError(f"{usage}: the server {server!r} has no prompt {name!r} (its prompts: {known})")
    try:
        messages = await manager.get_prompt(server, name, _arguments(prompt, text))
    except PromptError as e:
        raise PromptError(f"{prompt_usage(server, prompt)}: {e}") from None
    except (ServerDown, CallFailed) as e:
        raise PromptError(f"{usage}: the server could not give the prompt: {e}") from None
    blocks: list[ContentBlock] = []
    for message in messages:
        content = message.get("content")
        parts = result_blocks(CallOutcome(content=[content] if isinstance(content, dict) else []))
        if message.get("role") == "assistant":
            parts = [{"type": "text", "text": "(the prompt's assistant turn)"}, *parts]
        blocks += parts
    return blocks or [{"type": "text", "text": f"(the prompt {usage} is empty)"}]


async def expand_prompt(manager: McpManager, prompt: str) -> tuple[list[ContentBlock], list[str]]:
    """The prompt's content blocks with MCP prompts run and mentioned resources attached, and
    warnings for the person (a resource that could not be read). PromptError: not sent at all."""
    command = prompt_command(prompt)
    blocks: list[ContentBlock] = await _run_prompt(manager, *command) if command else [{"type": "text", "text": prompt}]
    warnings: list[str] = []
    servers = set(manager.resource_servers())
    for server, uri in mentions(prompt):
        if server not in servers:
            continue
        try:
            contents = await manager.read_resource(server, uri)
        except (ServerDown, CallFailed, KeyError) as e:
            warnings.append(f"@{server}:{uri} was not attached: {e}")
            continue
        blocks += resource_parts(server, uri, contents)
    return blocks, warnings


def wants_expansion(prompt: object) -> bool:
    """Whether a prompt names an MCP prompt or mentions a resource (cheap: no server is asked)."""
    return isinstance(prompt, str) and (prompt_command(prompt) is not None or bool(mentions(prompt)))
