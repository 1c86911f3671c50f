"""The Messages API's prompt-cache accounting, simulated: what a request would be billed.

`PromptCache.account(body)` takes a request body as the SDK sends it and returns its `usage`
the way the API documents it:

- The prompt is one sequence of blocks in a fixed order: each tool definition, each system
  block, then each content block of each message (a string content is one block). A cache
  entry is keyed by everything from the start up to and including one block (the model, and
  for message blocks the `tool_choice` and `thinking` settings, are part of the key).
- A block with `cache_control` is a breakpoint; a request may have at most four (more is a 400
  error). A top-level `cache_control` (automatic caching) puts one on the last block.
- For each breakpoint the cache is searched at its own position and at the block boundaries
  before it, up to `LOOKBACK` blocks back; the longest prefix found is read
  (`cache_read_input_tokens`). Entries exist only where an earlier request had a breakpoint.
- Everything from the prefix read to the last breakpoint is written
  (`cache_creation_input_tokens`, split by lifetime in `cache_creation`) and becomes an entry at
  each breakpoint; `input_tokens` is what comes after the last breakpoint (or after the prefix
  read when that reaches further).
- A prefix shorter than the model's minimum cacheable length is neither read nor written.
- An entry lives five minutes (`"ttl": "1h"`: an hour) from its last write or read, on a
  simulated clock (`advance()`); a breakpoint with a longer lifetime may not follow one with a
  shorter.

Tokens are estimated from each block's JSON (about four characters a token): the real
tokenizer is not public, and what the benchmarks compare is shares and ratios on the same
estimate. `CachingServer` is a ReplayServer whose replies carry this usage.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from .sse_server import Event, Recorded, ReplayServer, Reply, error_reply

__all__ = [
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "CacheError",
    "CachingServer",
    "PromptCache",
    "blocks_of",
    "estimate_tokens",
    "minimum_cacheable",
]

LOOKBACK = 20  # block boundaries searched before a breakpoint, besides its own
MAX_BREAKPOINTS = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

# The minimum cacheable prompt length, by model family and version (first match wins).
_MINIMUMS: list[tuple[str, int]] = [
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
]
DEFAULT_MINIMUM = 1024  # Sonnet 3.7 and 4.x, Opus 3, 4 and 4.1


def minimum_cacheable(model: str) -> int:
    """Tokens a prefix needs before a breakpoint can cache it, for `model`."""
    for prefix, tokens in _MINIMUMS:
        if model.startswith(prefix):
            return tokens
    return DEFAULT_MINIMUM


def estimate_tokens(block: Any) -> int:
    """The simulated tokenizer: about four characters of the block's JSON a token."""
    return max(1, math.ceil(len(_canonical(block)) / 4))


class CacheError(ValueError):
    """A request the API would refuse (status 400) for its cache_control."""


@dataclass(kw_only=True)
class Block:
    where: str  # "tools[3]", "system[0]", "messages[5].content[2]"
    tokens: int
    key: str  # the hash of the prefix up to and including this block
    ttl: str | None  # "5m" / "1h" when the block is a breakpoint


@dataclass(kw_only=True)
class _Entry:
    tokens: int
    ttl: str
    expires: float


@dataclass
class PromptCache:
    """The cache of one organisation, and the accounting of every request it saw."""

    minimum: int | None = None  # None: the model's own minimum
    lookback: int = LOOKBACK
    now: float = 0.0  # the simulated clock, in seconds
    entries: dict[str, _Entry] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)  # one usage per request accounted

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def account(self, body: dict[str, Any]) -> dict[str, Any]:
        """The usage the API would report for `body` (its input side), updating the cache."""
        blocks = blocks_of(body)
        minimum = self.minimum if self.minimum is not None else minimum_cacheable(str(body.get("model", "")))
        cumulative = list(_running_sum(b.tokens for b in blocks))
        total = cumulative[-1] if cumulative else 0
        breakpoints = [i for i, b in enumerate(blocks) if b.ttl is not None]
        read_end = self._longest_hit(blocks, breakpoints, cumulative, minimum)
        read = cumulative[read_end] if read_end >= 0 else 0
        written = {"5m": 0, "1h": 0}
        last_written = read_end
        for i in breakpoints:
            if cumulative[i] < minimum:
                continue
            ttl = blocks[i].ttl or "5m"
            if i > last_written:
                written[ttl] += cumulative[i] - (cumulative[last_written] if last_written >= 0 else 0)
                last_written = i
            entry = self.entries.get(blocks[i].key)
            if entry is None or entry.expires < self.now or TTL_SECONDS[ttl] > TTL_SECONDS[entry.ttl]:
                entry = _Entry(tokens=cumulative[i], ttl=ttl, expires=0.0)
                self.entries[blocks[i].key] = entry
            entry.expires = max(entry.expires, self.now + TTL_SECONDS[entry.ttl])
        cached_end = max(read_end, last_written)
        usage = {
            "input_tokens": total - (cumulative[cached_end] if cached_end >= 0 else 0),
            "cache_creation_input_tokens": written["5m"] + written["1h"],
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written["5m"],
                "ephemeral_1h_input_tokens": written["1h"],
            },
        }
        self.log.append(usage)
        return usage

    def _longest_hit(self, blocks: list[Block], breakpoints: list[int], cumulative: list[int], minimum: int) -> int:
        """The last block of the longest cached prefix a breakpoint finds (-1: none); the
        entry read is refreshed."""
        best = -1
        for i in breakpoints:
            for j in range(i, max(i - self.lookback, 0) - 1, -1):
                entry = self.entries.get(blocks[j].key)
                if entry is not None and entry.expires >= self.now and cumulative[j] >= minimum:
                    entry.expires = self.now + TTL_SECONDS[entry.ttl]
                    best = max(best, j)
                    break
        return best


def blocks_of(body: dict[str, Any]) -> list[Block]:
    """The request's blocks in cache order, each with its tokens, prefix key and breakpoint.
    Raises CacheError for what the API refuses: over four breakpoints, a longer lifetime after
    a shorter one."""
    out: list[Block] = []
    digest = hashlib.sha256(_canonical({"model": body.get("model")}).encode())

    def add(where: str, block: Any) -> None:
        control = block.get("cache_control") if isinstance(block, dict) else None
        bare = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
        digest.update(_canonical(bare).encode())
        ttl = None if control is None else str(control.get("ttl", "5m"))
        if ttl is not None and ttl not in TTL_SECONDS:
            raise CacheError(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
        out.append(Block(where=where, tokens=estimate_tokens(bare), key=digest.copy().hexdigest(), ttl=ttl))

    for i, tool in enumerate(body.get("tools") or []):
        add(f"tools[{i}]", tool)
    system = body.get("system")
    for i, block in enumerate([{"type": "text", "text": system}] if isinstance(system, str) else system or []):
        add(f"system[{i}]", block)
    digest.update(_canonical({"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")}).encode())
    for m, message in enumerate(body.get("messages") or []):
        digest.update(_canonical({"role": message.get("role")}).encode())
        content = message.get("content")
        for c, block in enumerate([{"type": "text", "text": content}] if isinstance(content, str) else content or []):
            add(f"messages[{m}].content[{c}]", block)
    if isinstance(body.get("cache_control"), dict) and out:
        last = out[-1]
        last.ttl = last.ttl or str(body["cache_control"].get("ttl", "5m"))
    marks = [b for b in out if b.ttl is not None]
    if len(marks) > MAX_BREAKPOINTS:
        raise CacheError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."
        )
    for before, after in itertools.pairwise(marks):
        if TTL_SECONDS[after.ttl or "5m"] > TTL_SECONDS[before.ttl or "5m"]:
            raise CacheError(f"{after.where}: a cache_control with ttl='1h' must not come after one with ttl='5m'")
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _running_sum(values: Any) -> Any:
    total = 0
    for v in values:
        total += v
        yield total


class CachingServer(ReplayServer):
    """A ReplayServer whose streamed replies report the usage `cache` accounts for each request
    (input side; output tokens stay as scripted). A request the API would refuse for its
    cache_control gets the API's 400 instead of the queued reply. `messages/count_tokens` is
    answered by the same estimate, without taking a queued reply. `usages` lists the usage of
    each message request, in order."""

    def __init__(self, cache: PromptCache | None = None) -> None:
        super().__init__()
        self.cache = cache or PromptCache()
        self.usages: list[dict[str, Any]] = []
        self._account_lock = threading.Lock()

    def _take(self, recorded: Recorded) -> tuple[int, Reply]:
        if urllib.parse.urlsplit(recorded.path).path == "/v1/messages/count_tokens":
            # The API's own count, by the same estimate; it takes no scripted reply.
            with self._lock:
                self.requests.append(recorded)
                number = len(self.requests) - 1
            try:
                tokens = sum(b.tokens for b in blocks_of(recorded.body))
            except CacheError as err:
                return number, error_reply(400, "invalid_request_error", str(err))
            return number, Reply(body={"input_tokens": tokens})
        number, reply = super()._take(recorded)
        if urllib.parse.urlsplit(recorded.path).path != "/v1/messages" or reply.events is None:
            return number, reply
        with self._account_lock:
            try:
                usage = self.cache.account(recorded.body)
            except CacheError as err:
                return number, error_reply(400, "invalid_request_error", str(err))
            self.usages.append(usage)
        return number, Reply(
            status=reply.status,
            events=[_with_usage(e, usage, f"msg_{number:04d}") for e in reply.events],
            headers=reply.headers,
            hold_open=reply.hold_open,
            cut=reply.cut,
        )


def _with_usage(event: Event, usage: dict[str, Any], message_id: str) -> Event:
    """`event` with the accounted usage, and an id of its own for each message (clients that
    merge the pieces of one message by id, as Claude Code does, would join replies that share one)."""
    if event.name != "message_start":
        return event
    data = copy.deepcopy(event.data)
    data["message"]["usage"] = {**data["message"].get("usage", {}), **usage}
    data["message"]["id"] = message_id
    return Event(name=event.name, data=data, delay=event.delay)
