"""The conversation as data: the Messages API history and its invariant.

Modules import one way, each only from those above it in this list:
- `blocks`: the wire data as types: `Message`, its content blocks, a tool definition, and
  `JsonValue`/`JsonObject` for JSON whose shape is open;
- `messages`: the history invariant (every tool_use answered once, in the next message),
  checked and repaired, and the only functions that append to a history;
- `tool_ids`: tool_use ids made well-formed and unique, with an incremental index of a history's ids.
"""
