"""What the tests share: helpers, fixtures and the harnesses that drive real software.

Modules, in import order:
    transcript   tool_use blocks for scripted models; tool_result blocks and their text
    tools        the ToolContext factory, recording tools, project trees, one direct tool call
    fixtures     rec, ctx, and the InteractiveShell fixtures (loaded by tests/conftest.py)

A helper used by one test file stays in that file; one used by two or more lives here, once.
"""
