"""Hostile MCP payloads: what a server sends is untrusted bytes, held to the rules built-in tools keep.

A raw JSON-RPC server (tests/support/mcp_servers/hostile.py) answers each tool in a hostile way; every
case goes through the real agent, transport and lifecycle, and must end in a clear error or a
bounded, valid result, with the history valid and the server usable again after. The test prints
the cases tried and how many held.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.base.images import image_dimensions, image_problem, sniff_image
from ipy_agent.history.messages import history_problems
from ipy_agent.mcp import stdio as mcp_stdio
from ipy_agent.mcp.results import MAX_IMAGES
from ipy_agent.mcp.stdio import LineReader, MessageTooLarge
from tests.support.mcp import SERVERS
from tests.support.transcript import results_of, use

HOSTILE = str(SERVERS / "hostile.py")
LIMIT = 16 * 1024 * 1024  # the message limit for this test (the real one is 32 MiB)
BIG = 3 * 1024 * 1024


def _text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def _images_ok(block: dict[str, Any]) -> bool:
    shown = [b for b in block.get("content") or [] if isinstance(b, dict) and b.get("type") == "image"]
    for b in shown:
        raw = base64.b64decode(b["source"]["data"], validate=True)
        mime = sniff_image(raw[:16])
        if mime != b["source"]["media_type"] or image_problem(len(raw), image_dimensions(raw, mime)):
            return False
    text = _text(block)
    # Shown: the JPEG declared as PNG (as a JPEG), the GIF, then PNGs until the 20 a result may carry.
    return len(shown) == MAX_IMAGES and all(
        note in text
        for note in (
            "its bytes are not a PNG, JPEG, GIF or WebP image",
            "not valid base64",
            "20000x20000 pixels",
            "over the 5 MB limit",
            "left out: one result carries at most",
        )
    )


CASES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "endless_line": lambda b: bool(b.get("is_error")) and "limit for one MCP message" in _text(b),
    "big_in_pieces": lambda b: not b.get("is_error") and "<persisted-output>" in _text(b) and len(_text(b)) < 20_000,
    "flood": lambda b: bool(b.get("is_error")) and "did not answer within" in _text(b),
    "bad_images": _images_ok,
    "huge_error": lambda b: bool(b.get("is_error")) and len(_text(b)) < 5_000,
    "deep": lambda b: len(_text(b)) < 200_000,
    "many_blocks": lambda b: len(json.dumps(b)) < 200_000,
    "not_utf8": lambda b: not b.get("is_error") and "after garbage" in _text(b),
    "spoof": lambda b: not b.get("is_error") and _text(b) == "real",
    "fine": lambda b: not b.get("is_error") and _text(b) == "ok fine",
}


@pytest.mark.slow  # a corpus of hostile payloads: --full runs it
def test_hostile_payloads_end_in_clear_errors_or_bounded_results(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mcp_stdio, "MAX_MESSAGE_BYTES", LIMIT)
    server = {"command": sys.executable, "args": [HOSTILE], "env": {"HOSTILE_BIG": str(BIG)}, "timeout": 4}
    turns: list[Any] = [[use(f"mcp__h__{name}", name)] for name in CASES]
    agent = Agent(model=ScriptedModel([*turns, "done"]), cwd=tmp_path, tools=[], mcp_servers={"h": server})
    try:
        agent.run("go")
        blocks = {}
        for message in agent.messages:
            if message["role"] == "user" and isinstance(message["content"], list):
                blocks.update(results_of(message))
        held = [name for name, ok in CASES.items() if name in blocks and ok(blocks[name])]
        with capsys.disabled():
            print(f"\n[hostile MCP payloads] cases tried: {len(CASES)}; held: {len(held)}")
            for name in CASES:
                if name not in held:
                    print(f"  HOLE {name}: {json.dumps(blocks.get(name))[:300]}")
        assert held == list(CASES)
        assert history_problems(agent.messages) == []
    finally:
        agent.close()


def test_the_line_reader_grows_linearly_and_stops_at_its_limit():
    reader = LineReader(limit=1000)
    assert reader.feed(b'{"a": 1}\n{"b"') == [b'{"a": 1}']
    assert reader.feed(b": 2}\n\n") == [b'{"b": 2}', b""]
    pieces = [b"x" * 10 for _ in range(99)]
    for p in pieces:
        assert reader.feed(p) == []
    with pytest.raises(MessageTooLarge):
        reader.feed(b"y" * 11)  # 1,001 bytes without a newline
    # One long message in many small pieces: each piece is kept once, joined once.
    reader = LineReader(limit=10_000_000)
    for _ in range(10_000):
        reader.feed(b"z" * 512)
    assert reader.feed(b"\n") == [b"z" * 5_120_000]
