"""A second small MCP server for notebook 12: a library desk that asks and offers, over stdio.

Run by the notebook as `python library_server.py`. It shows the two directions a server can go
besides tools: it *asks the person* (elicitation: a form built from a JSON Schema, answered in
the cell) and it *offers resources* (documents the model lists and reads, and a person attaches
to a prompt with `@library:<uri>`).

- borrow: asks the person which copy and for how long (a form), then says what was lent;
- library://rules: a text resource; library://book/{title}: a resource template.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("library", instructions="A library desk. Borrowing asks the reader to confirm.")

BORROW_FORM = {
    "type": "object",
    "properties": {
        "copy": {
            "type": "string",
            "title": "Which copy",
            "oneOf": [{"const": "paper", "title": "Paperback"}, {"const": "ebook", "title": "E-book"}],
        },
        "weeks": {"type": "integer", "title": "For how many weeks", "minimum": 1, "maximum": 6, "default": 3},
        "reminder": {"type": "boolean", "title": "Remind me before it is due", "default": True},
    },
    "required": ["copy"],
}


@server.tool()
async def borrow(title: str, ctx: Context) -> str:
    """Borrow a book; the reader is asked which copy and for how long."""
    result = await ctx.session.elicit_form(f"Borrow {title!r}?", BORROW_FORM, related_request_id=ctx.request_id)
    if result.action != "accept" or not result.content:
        return f"Not borrowed: the reader chose {result.action}."
    c = result.content
    remind = ", with a reminder" if c.get("reminder") else ""
    return f"Lent {title!r} as {c['copy']} for {c['weeks']} weeks{remind}."


@server.resource("library://rules", name="rules", description="The lending rules.", mime_type="text/plain")
def rules() -> str:
    return "At most 3 books at a time. Loans run 1 to 6 weeks. E-books return themselves."


@server.resource("library://book/{title}", name="book", description="A book's catalogue card.")
def book(title: str) -> str:
    return f"{title}: 2 paper copies on the shelf, e-book available."


if __name__ == "__main__":
    server.run()
