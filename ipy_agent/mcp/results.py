"""What an MCP tool result becomes for the model: tool_result content blocks.

Text stays text; images become image blocks (the model sees them); an embedded text resource
becomes text headed by its URI, an embedded image resource an image; structured content is
given as JSON when the server sent no text beside it (servers are asked to mirror it in text,
and most do, so adding it again would only double the size). What the Messages API cannot
carry (audio, other binary data) is named, with its size, rather than dropped silently. The
budget stage after this (runtime/budget.py) spills large text as for every other tool.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from .connection import CallOutcome

__all__ = ["IMAGE_TYPES", "MAX_IMAGE_BASE64", "result_blocks"]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BASE64 = 5 * 1024 * 1024  # the Messages API's limit for one image


def _image(data: Any, media: Any, what: str) -> dict[str, Any]:
    mime = str(media or "").lower()
    if mime == "image/jpg":
        mime = "image/jpeg"
    if not isinstance(data, str):
        return _text(f"[{what}: no image data]")
    if mime not in IMAGE_TYPES:
        return _text(
            f"[{what}: an image of type {mime or 'unknown'!r}, which cannot be shown to you; "
            f"supported: {', '.join(IMAGE_TYPES)}]"
        )
    if len(data) > MAX_IMAGE_BASE64:
        return _text(f"[{what}: a {mime} image of {len(data) * 3 // 4:,} bytes, over the 5 MB limit for images]")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return _text(f"[{what}: its image data is not valid base64]")
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _block(item: dict[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    if kind == "text":
        return _text(str(item.get("text", "")))
    if kind == "image":
        return _image(item.get("data"), item.get("mimeType"), "image")
    if kind == "audio":
        size = len(str(item.get("data", ""))) * 3 // 4
        return _text(f"[audio ({item.get('mimeType', 'unknown type')}, {size:,} bytes): audio cannot be shown to you]")
    if kind == "resource_link":
        name = f" ({item['name']})" if item.get("name") else ""
        mime = f", {item['mimeType']}" if item.get("mimeType") else ""
        return _text(f"[resource link: {item.get('uri', '?')}{name}{mime}]")
    if kind == "resource":
        res = item.get("resource") or {}
        uri, media = str(res.get("uri", "?")), res.get("mimeType")
        if "text" in res:
            return _text(f"Resource {uri}" + (f" ({media})" if media else "") + f":\n{res['text']}")
        if str(media or "").startswith("image/"):
            return _image(res.get("blob"), media, f"resource {uri}")
        size = len(str(res.get("blob", ""))) * 3 // 4
        return _text(f"[resource {uri}: {size:,} bytes of {media or 'binary data'}, which cannot be shown to you]")
    return _text(f"[a content block of unknown type {kind!r}]")


def result_blocks(outcome: CallOutcome) -> list[dict[str, Any]]:
    blocks = [_block(item) for item in outcome.content if isinstance(item, dict)]
    has_text = any(b["type"] == "text" and b["text"].strip() for b in blocks)
    if outcome.structured is not None and not has_text:
        blocks.append(_text(json.dumps(outcome.structured, indent=2, ensure_ascii=False, default=str)))
    if outcome.is_error:
        # Plainly an error, whatever shape the server gave it.
        head = "The MCP tool reported an error" + (":" if blocks else " (without details).")
        blocks.insert(0, _text(head))
    return blocks
