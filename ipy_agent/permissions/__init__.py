"""Whether a tool call may run: rules, modes, and asking a person.

Modules import one way, each only from those above it in this list:
- `rules`: permission rules in Claude Code's syntax (`Tool` or `Tool(specifier)`), matching, the
  built-in Read deny rules nobody writes (credential stores) and a conversation's rule set;
- `decide`: the permission stage, top to bottom: the decision for one call (`STEPS`: rules, mode,
  the tool's and the hooks' opinions), asking the person on "ask", and the words of a denial.
"""
