"""Result budgets: keep tool results within a size the context can afford, losing nothing.

A result over its tool's `max_result_chars` is written whole to a file in the conversation's
spill directory (which Read may read without a prompt) and the model gets a preview with the
path and the total size. One message's results together have a budget too; past it the largest
are spilled first. Image blocks are never spilled: a preview of an image is useless. An empty
result becomes "(<Tool> completed with no output)", since an empty result at the end of a
prompt tends to make models end their turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ipy_agent.history.blocks import ImageBlock, ResultPart, ToolResultBlock

__all__ = [
    "MAX_SPILL_BYTES",
    "ResultBudget",
    "capped_for_spill",
    "empty_placeholder",
    "result_chars",
    "spill_file_name",
]

from ipy_agent.contract.limits import MESSAGE_RESULT_CHARS, PREVIEW_CHARS, SELF_LIMITING, TOOL_RESULT_CHARS

# Bytes one spill file may hold: past it the rest is dropped with a note at the end of the file,
# so a result (or a command printing forever) costs bounded disk.
MAX_SPILL_BYTES = 64 * 1024 * 1024


def spill_note(dropped: int) -> str:
    return f"\n\n[... {dropped:,} more bytes were not saved: spill files stop at {MAX_SPILL_BYTES:,} bytes]\n"


def capped_for_spill(text: str) -> str:
    """`text` as it goes into a spill file: whole, or its first MAX_SPILL_BYTES and a note."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_SPILL_BYTES:
        return text
    return data[:MAX_SPILL_BYTES].decode("utf-8", "ignore") + spill_note(len(data) - MAX_SPILL_BYTES)


def spill_file_name(tool_use_id: object, prefix: str = "") -> str:
    """A file name made from a tool_use id the model chose: no path characters, no dot files,
    bounded length, and distinct for distinct ids (a short hash keeps `a/b` and `a_b` apart)."""
    import hashlib

    raw = str(tool_use_id or "result")
    safe = _SAFE_ID.sub("_", raw).lstrip(".")[:80] or "result"
    if safe != raw:
        safe += "-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{prefix}{safe}.txt"


def empty_placeholder(tool_name: str) -> str:
    return f"({tool_name} completed with no output)"


def result_chars(block: ToolResultBlock) -> int:
    """Size of a tool_result's text, the part a budget can move to disk."""
    content = block.get("content")
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(b.get("text", "")) for b in content if isinstance(b, dict) and b["type"] == "text")
    return 0


def _is_empty(content: str | list[ResultPart] | None) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return not content or all(
            isinstance(b, dict) and b.get("type") == "text" and not str(b.get("text", "")).strip() for b in content
        )
    return False


def _human_size(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    nl = cut.rfind("\n")
    # Cut at a line end when one is in the second half; otherwise keep the whole window.
    return cut[:nl] if nl > limit // 2 else cut


_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class ResultBudget:
    spill_dir: Path | None
    message_limit: int = MESSAGE_RESULT_CHARS
    default_tool_limit: int = TOOL_RESULT_CHARS

    def fill_empty(self, block: ToolResultBlock, tool_name: str) -> ToolResultBlock:
        if _is_empty(block.get("content")):
            return {**block, "content": empty_placeholder(tool_name)}
        return block

    def apply_tool_limit(self, block: ToolResultBlock, limit: int | None) -> tuple[ToolResultBlock, Path | None]:
        limit = self.default_tool_limit if limit is None else limit
        if limit >= SELF_LIMITING or result_chars(block) <= limit:
            return block, None
        return self.spill(block)

    def apply_message_limit(
        self, blocks: list[ToolResultBlock], exempt: frozenset[str] = frozenset()
    ) -> dict[str, Path | None]:
        """Spill the largest results in place until the message fits.

        Returns the tool_use ids of the blocks replaced, each with its spill file (None when the
        file could not be written and the result was cut instead). `exempt` holds the ids of
        self-limiting tools' results, which stay as they are.
        """
        changed: dict[str, Path | None] = {}
        total = sum(result_chars(b) for b in blocks)
        if total <= self.message_limit:
            return changed
        candidates = [i for i in range(len(blocks)) if blocks[i].get("tool_use_id") not in exempt]
        order = sorted(candidates, key=lambda i: result_chars(blocks[i]), reverse=True)
        for i in order:
            if total <= self.message_limit:
                break
            before = result_chars(blocks[i])
            if before <= PREVIEW_CHARS * 2:
                break
            new, path = self.spill(blocks[i])
            blocks[i] = new
            changed[str(new.get("tool_use_id"))] = path
            total += result_chars(new) - before
        return changed

    def spill(self, block: ToolResultBlock) -> tuple[ToolResultBlock, Path | None]:
        content = block.get("content")
        if self.spill_dir is None:
            return block, None
        texts, images = _split_content(content)
        full = "\n".join(texts)
        path = self.spill_dir / spill_file_name(block.get("tool_use_id"))
        try:
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(capped_for_spill(full), encoding="utf-8", errors="surrogatepass")
        except OSError as e:
            # A full disk must not lose the run: cut the result instead, and say so.
            cut = (
                f"<truncated-output>\nOutput too large ({_human_size(len(full))}) and it could not be saved to a file "
                f"({type(e).__name__}: {e}). First part:\n{_preview(full, PREVIEW_CHARS * 4)}\n...\n</truncated-output>"
            )
            return {**block, "content": cut if not images else [{"type": "text", "text": cut}, *images]}, None
        note = (
            f"<persisted-output>\nOutput too large ({_human_size(len(full))}, {len(full):,} characters). "
            f"The full output was saved to: {path}\nRead that file (with offset/limit) or Grep it for the parts you need.\n\n"
            f"Preview (first {_human_size(min(len(full), PREVIEW_CHARS))}):\n{_preview(full)}\n...\n</persisted-output>"
        )
        new_content: str | list[ResultPart] = note if not images else [{"type": "text", "text": note}, *images]
        return {**block, "content": new_content}, path


def _split_content(content: str | list[ResultPart] | None) -> tuple[list[str], list[ImageBlock]]:
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    images: list[ImageBlock] = []
    for b in content or []:
        if isinstance(b, dict) and b.get("type") == "text":
            texts.append(str(b.get("text", "")))
        elif isinstance(b, dict) and b["type"] == "image":
            images.append(b)
        else:
            texts.append(json.dumps(b, ensure_ascii=False))
    return texts, images
