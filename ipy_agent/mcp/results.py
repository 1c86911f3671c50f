"""What an MCP tool result becomes for the model: tool_result content blocks.

Text stays text; images become image blocks (the model sees them) when they pass the checks
Read makes (base/images.py: the type judged by the bytes, not by what the server declared;
the API's size and dimension limits), at most `MAX_IMAGES` of them and `MAX_IMAGES_BASE64` in
all per result; an embedded text resource
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

from ipy_agent.base import images
from ipy_agent.history.blocks import JsonObject, JsonValue, ResultPart, TextBlock

from .connection import CallOutcome

__all__ = ["IMAGE_TYPES", "MAX_IMAGES", "MAX_IMAGES_BASE64", "MAX_IMAGE_BASE64", "result_blocks"]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BASE64 = images.MAX_IMAGE_BASE64  # the Messages API's limit for one image
MAX_IMAGES = 20  # per result: what one tool call may add to every later request
MAX_IMAGES_BASE64 = 2 * images.MAX_IMAGE_BASE64


class _Room:
    """What is left of one result's image allowance."""

    def __init__(self) -> None:
        self.count = 0
        self.size = 0


def _image(data: JsonValue, media: JsonValue, what: str, room: _Room) -> ResultPart:
    declared = str(media or "").lower() or "unknown"
    if not isinstance(data, str):
        return _text(f"[{what}: no image data]")
    if len(data) > MAX_IMAGE_BASE64:
        return _text(f"[{what}: a {declared} image of {len(data) * 3 // 4:,} bytes, over the 5 MB limit for images]")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return _text(f"[{what}: its image data is not valid base64]")
    mime = images.sniff_image(raw[:16])  # by the bytes: a declared type may be wrong, or a lie
    if mime is None:
        return _text(
            f"[{what}: declared as {declared}, but its bytes are not a PNG, JPEG, GIF or WebP image, so it "
            "cannot be shown to you]"
        )
    if problem := images.image_problem(len(raw), images.image_dimensions(raw, mime)):
        return _text(f"[{what}: a {mime} image that cannot be shown to you: {problem}]")
    encoded = base64.b64encode(raw).decode("ascii")
    if room.count >= MAX_IMAGES or room.size + len(encoded) > MAX_IMAGES_BASE64:
        return _text(
            f"[{what}: a {mime} image left out: one result carries at most {MAX_IMAGES} images and "
            f"{MAX_IMAGES_BASE64 / 1e6:.0f} MB of them]"
        )
    room.count += 1
    room.size += len(encoded)
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": encoded}}


def _text(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def _block(item: JsonObject, room: _Room) -> ResultPart:
    kind = item.get("type")
    if kind == "text":
        return _text(str(item.get("text", "")))
    if kind == "image":
        return _image(item.get("data"), item.get("mimeType"), "image", room)
    if kind == "audio":
        size = len(str(item.get("data", ""))) * 3 // 4
        return _text(f"[audio ({item.get('mimeType', 'unknown type')}, {size:,} bytes): audio cannot be shown to you]")
    if kind == "resource_link":
        name = f" ({item['name']})" if item.get("name") else ""
        mime = f", {item['mimeType']}" if item.get("mimeType") else ""
        return _text(f"[resource link: {item.get('uri', '?')}{name}{mime}]")
    if kind == "resource":
        resource = item.get("resource")
        res = resource if isinstance(resource, dict) else {}
        uri, media = str(res.get("uri", "?")), res.get("mimeType")
        if "text" in res:
            return _text(f"Resource {uri}" + (f" ({media})" if media else "") + f":\n{res['text']}")
        if str(media or "").startswith("image/"):
            return _image(res.get("blob"), media, f"resource {uri}", room)
        size = len(str(res.get("blob", ""))) * 3 // 4
        return _text(f"[resource {uri}: {size:,} bytes of {media or 'binary data'}, which cannot be shown to you]")
    return _text(f"[a content block of unknown type {kind!r}]")


def result_blocks(outcome: CallOutcome) -> list[ResultPart]:
    room = _Room()
    blocks = [_block(item, room) for item in outcome.content if isinstance(item, dict)]
    has_text = any(b["type"] == "text" and b["text"].strip() for b in blocks)
    if outcome.structured is not None and not has_text:
        blocks.append(_text(json.dumps(outcome.structured, indent=2, ensure_ascii=False, default=str)))
    if outcome.is_error:
        # Plainly an error, whatever shape the server gave it.
        head = "The MCP tool reported an error" + (":" if blocks else " (without details).")
        blocks.insert(0, _text(head))
    return blocks
