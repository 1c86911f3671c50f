"""The rules a person granted with "Always allow", kept for as long as the kernel session lives.

A grant is the person's decision ("stop asking me about `Bash(git status:*)`"), not part of one
conversation: `%agent --new` and `%agent_reset` start the conversation afresh but keep the
grants, and say so; `%agent_rules` lists them with where each came from, and
`%agent_rules --revoke RULE` takes one back. The rules themselves live on the agent (source
"granted", where the permission lifecycle puts them); this keeps the session's list and sources.
"""

from __future__ import annotations

from pathlib import Path

from ipy_agent.permissions.rules import PermissionRules, builtin_listing

__all__ = ["SessionGrants"]


class SessionGrants:
    def __init__(self) -> None:
        self.sources: dict[str, str] = {}  # rule text -> where it was granted

    def collect(self, rules: PermissionRules, source: str) -> list[str]:
        """Take note of grants in `rules` not seen before; return their texts."""
        new = [r.text for r in rules.allow if r.source == "granted" and r.text not in self.sources]
        for text in new:
            self.sources[text] = source
        return new

    def apply(self, rules: PermissionRules) -> list[str]:
        """Put every session grant into `rules` (a new or resumed conversation); return their texts."""
        for text in self.sources:
            rules.add("allow", text, source="granted")
        return list(self.sources)

    def revoke(self, text: str, rules: PermissionRules | None) -> None:
        """Remove a grant (from `rules` too, the current conversation's); KeyError when it is not one."""
        wanted = text.strip()
        on_agent = rules is not None and any(r.source == "granted" and r.text == wanted for r in rules.allow)
        if wanted not in self.sources and not on_agent:
            raise KeyError(wanted)
        self.sources.pop(wanted, None)
        if rules is not None:
            rules.allow[:] = [r for r in rules.allow if not (r.source == "granted" and r.text == wanted)]

    def note(self) -> str:
        """One sentence for --new / %agent_reset: what stays."""
        if not self.sources:
            return ""
        return (
            f'Rules you granted with "Always allow" stay for this kernel session: {", ".join(self.sources)} '
            "(%agent_rules lists them; %agent_rules --revoke RULE takes one back)."
        )

    def listing(self, rules: PermissionRules | None, cwd: Path | None = None) -> str:
        """The grants in force in `rules` (the current conversation's), with where each came
        from, and the built-in rules with what lifts them (allow rules relative to `cwd`)."""
        builtin = builtin_listing(rules.deny, rules.allow, cwd or Path.cwd()) if rules is not None else []
        granted = [r.text for r in rules.allow if r.source == "granted"] if rules is not None else []
        if not granted:
            none = (
                'No rules granted with "Always allow" in this kernel session. (%agent_tools lists every '
                "permission rule, with the configured ones.)"
            )
            return "\n".join([none, *(["", *builtin] if builtin else [])])
        width = max(len(t) for t in granted)
        lines = [
            'Rules granted with "Always allow" (they last for this kernel session, across %agent --new '
            "and %agent_reset):"
        ]
        lines += [f"  {text.ljust(width)}  from {self.sources.get(text, 'this conversation')}" for text in granted]
        lines.append("Take one back with %agent_rules --revoke RULE.")
        if builtin:
            lines += ["", *builtin]
        return "\n".join(lines)
