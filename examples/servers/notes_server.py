"""A small MCP server for notebook 12: a notebook of notes, over stdio.

Run by the notebook as `python notes_server.py`; it keeps its notes in NOTES_FILE (a path given
in the environment), so each run of the notebook starts from its own scratch file. Three tools,
with three kinds of annotation, to show what each does to a call in ipy_agent:

- search_notes: readOnlyHint, so it runs without a prompt and beside other read-only calls;
- add_note: no annotations, so the client assumes the worst (it asks, and runs alone);
- delete_all_notes: destructiveHint, so the approval prompt carries a warning.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes", instructions="A notebook of short notes. Search before you add.")
NOTES = Path(os.environ["NOTES_FILE"])


def _load() -> list[str]:
    return json.loads(NOTES.read_text()) if NOTES.exists() else []


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search_notes(query: str) -> str:
    """Return the notes that contain `query` (case-insensitive), one per line."""
    found = [n for n in _load() if query.lower() in n.lower()]
    return "\n".join(found) if found else f"No note contains {query!r}."


@server.tool()
def add_note(text: str) -> str:
    """Add a note."""
    notes = _load() + [text]
    NOTES.write_text(json.dumps(notes))
    return f"Added note {len(notes)}."


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_all_notes() -> str:
    """Delete every note."""
    count = len(_load())
    NOTES.write_text("[]")
    return f"Deleted {count} notes."


if __name__ == "__main__":
    server.run()
