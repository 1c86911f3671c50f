"""The simulated prompt cache (tests/support/prompt_cache.py) bills as the API documents.

Each test is one documented case: a large cached system block read back by a second request
with a new question; a prompt under the minimum length; a breakpoint that moves along a growing
conversation; the lookback limit; the lifetime and its refresh; four breakpoints at most; the
tool list, the system prompt and the messages invalidating what follows them. The real SDK
talks to the CachingServer in the last test, so the usage reaches the client as it would.
"""

from __future__ import annotations

import pytest

from tests.support.prompt_cache import (
    LOOKBACK,
    CachingServer,
    PromptCache,
    blocks_of,
    estimate_tokens,
    minimum_cacheable,
)
from tests.support.sse_server import message_events

BOOK = "It is a truth universally acknowledged. " * 2_000  # about 20,000 tokens
EPH = {"type": "ephemeral"}


def body(messages, *, system=None, tools=None, model="claude-sonnet-4-5", **extra):
    out = {"model": model, "max_tokens": 100, "messages": messages, **extra}
    if system is not None:
        out["system"] = system
    if tools is not None:
        out["tools"] = tools
    return out


def user(text, *, cached=False):
    block = {"type": "text", "text": text, **({"cache_control": EPH} if cached else {})}
    return {"role": "user", "content": [block]}


def book_system():
    return [
        {"type": "text", "text": "You analyse literary works."},
        {"type": "text", "text": BOOK, "cache_control": EPH},
    ]


def total(usage):
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]


def test_a_cached_document_is_written_once_then_read_and_only_the_question_is_new_input():
    cache = PromptCache()
    first = cache.account(body([user("What are the major themes?")], system=book_system()))
    second = cache.account(body([user("Who is the narrator?")], system=book_system()))
    prefix = first["cache_creation_input_tokens"]
    assert prefix > 10_000 and first["cache_read_input_tokens"] == 0
    # The question after the breakpoint is billed as plain input both times.
    assert first["input_tokens"] == estimate_tokens(user("What are the major themes?")["content"][0])
    assert second["cache_read_input_tokens"] == prefix and second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] == estimate_tokens(user("Who is the narrator?")["content"][0])
    # The three fields add up to the whole prompt.
    assert total(first) == sum(
        b.tokens for b in blocks_of(body([user("What are the major themes?")], system=book_system()))
    )


def test_a_prefix_under_the_minimum_length_is_neither_written_nor_read():
    cache = PromptCache()
    short = [{"type": "text", "text": "Be brief. " * 50, "cache_control": EPH}]  # about 125 tokens
    for _ in range(2):
        usage = cache.account(body([user("hi")], system=short))
        assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0
        assert usage["input_tokens"] == total(usage) > 0
    assert minimum_cacheable("claude-sonnet-4-5") == 1024
    assert minimum_cacheable("claude-haiku-4-5") == minimum_cacheable("claude-opus-4-5") == 4096
    assert minimum_cacheable("claude-3-5-haiku-20241022") == 2048


def test_the_minimum_is_the_models_own():
    # About 1,500 tokens: enough for a Sonnet, not for Haiku 4.5.
    system = [{"type": "text", "text": "Rule. " * 1_000, "cache_control": EPH}]
    cache = PromptCache()
    assert cache.account(body([user("a")], system=system))["cache_creation_input_tokens"] > 1024
    assert cache.account(body([user("a")], system=system, model="claude-haiku-4-5"))["cache_creation_input_tokens"] == 0


def conversation(turns: int) -> list[dict]:
    """A growing chat; the breakpoint on the latest message only."""
    messages = [user(BOOK)]
    for i in range(turns):
        messages += [{"role": "assistant", "content": f"answer {i}"}, user(f"question {i}")]
    return messages


def with_breakpoint_on_last(messages):
    last = messages[-1]
    return [*messages[:-1], {**last, "content": [{**last["content"][-1], "cache_control": EPH}]}]


def test_a_breakpoint_moving_along_the_conversation_reads_the_last_request_and_writes_only_the_new_turn():
    cache = PromptCache()
    first = cache.account(body(with_breakpoint_on_last(conversation(1))))
    second = cache.account(body(with_breakpoint_on_last(conversation(2))))
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    new_blocks = blocks_of(body(conversation(2)))[-2:]
    assert second["cache_creation_input_tokens"] == sum(b.tokens for b in new_blocks)
    assert second["input_tokens"] == 0  # everything up to the breakpoint is cached


def test_the_lookback_finds_an_entry_up_to_twenty_blocks_back_and_no_further():
    """A breakpoint on block 30 only, then a request that adds N blocks with the breakpoint
    moved to its end: within the lookback the old entry is read, beyond it the prompt is
    written again from the start."""

    def chat(n):
        return [user(BOOK), *({"role": "assistant" if i % 2 == 0 else "user", "content": f"b{i}"} for i in range(n))]

    for added, hit in ((LOOKBACK, True), (LOOKBACK + 1, False)):
        cache = PromptCache()
        base = chat(29)  # 30 blocks
        first = cache.account(body(with_breakpoint_on_last(_blocks(base))))
        later = cache.account(body(with_breakpoint_on_last(_blocks(chat(29 + added)))))
        if hit:
            assert later["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
        else:
            assert later["cache_read_input_tokens"] == 0
            assert later["cache_creation_input_tokens"] > first["cache_creation_input_tokens"]


def _blocks(messages):
    return [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if isinstance(m["content"], str) else m
        for m in messages
    ]


def test_a_second_breakpoint_keeps_the_old_entry_within_reach_of_a_long_turn():
    """The same long turn as above, with a breakpoint also where the last request had one."""

    def chat(n):
        return _blocks(
            [user(BOOK), *({"role": "assistant" if i % 2 == 0 else "user", "content": f"b{i}"} for i in range(n))]
        )

    cache = PromptCache()
    first = cache.account(body(with_breakpoint_on_last(chat(29))))
    later = chat(29 + LOOKBACK + 5)
    later[29] = with_breakpoint_on_last(later[:30])[29]
    usage = cache.account(body(with_breakpoint_on_last(later)))
    assert usage["cache_read_input_tokens"] == first["cache_creation_input_tokens"]


def test_an_entry_lives_five_minutes_from_its_last_use_and_an_hour_when_asked():
    cache = PromptCache()
    req = body([user("q")], system=book_system())
    written = cache.account(req)["cache_creation_input_tokens"]
    cache.advance(4 * 60)
    assert cache.account(req)["cache_read_input_tokens"] == written  # a hit refreshes the lifetime
    cache.advance(4 * 60)
    assert cache.account(req)["cache_read_input_tokens"] == written
    cache.advance(5 * 60 + 1)
    expired = cache.account(req)
    assert expired["cache_read_input_tokens"] == 0 and expired["cache_creation_input_tokens"] == written
    assert expired["cache_creation"]["ephemeral_5m_input_tokens"] == written

    hour = [{"type": "text", "text": BOOK, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    long_req = body([user("q")], system=hour)
    first = cache.account(long_req)
    assert first["cache_creation"]["ephemeral_1h_input_tokens"] == first["cache_creation_input_tokens"] > 0
    cache.advance(50 * 60)
    assert cache.account(long_req)["cache_read_input_tokens"] == first["cache_creation_input_tokens"]


def test_more_than_four_breakpoints_or_a_longer_lifetime_after_a_shorter_is_refused():
    five = [{"type": "text", "text": f"part {i}", "cache_control": EPH} for i in range(5)]
    with pytest.raises(ValueError, match="maximum of 4 blocks with cache_control"):
        PromptCache().account(body([user("q")], system=five))
    mixed = [
        {"type": "text", "text": "a", "cache_control": EPH},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
    with pytest.raises(ValueError, match="must not come after"):
        PromptCache().account(body([user("q")], system=mixed))


def tool(name, text=BOOK[:4000]):
    return {"name": name, "description": text, "input_schema": {"type": "object", "properties": {}}}


def test_tools_then_system_then_messages_a_change_invalidates_what_follows_it_only():
    tools = [tool("A"), {**tool("B"), "cache_control": EPH}]
    system = [{"type": "text", "text": BOOK, "cache_control": EPH}]
    cache = PromptCache()
    first = cache.account(body([user("q")], system=system, tools=tools))
    tools_only = sum(b.tokens for b in blocks_of(body([], tools=tools)))
    # A new system prompt: the tools' entry is still read, the system block written again.
    other = [{"type": "text", "text": BOOK + " (revised)", "cache_control": EPH}]
    changed = cache.account(body([user("q")], system=other, tools=tools))
    assert changed["cache_read_input_tokens"] == tools_only
    # A tool added at the front: nothing is read.
    grown = [tool("Z"), *tools]
    assert cache.account(body([user("q")], system=system, tools=grown))["cache_read_input_tokens"] == 0
    # The same request as the first: read whole.
    assert (
        cache.account(body([user("q")], system=system, tools=tools))["cache_read_input_tokens"]
        == first["cache_creation_input_tokens"]
    )


def test_changing_tool_choice_or_thinking_invalidates_the_messages_but_not_the_system():
    system = [{"type": "text", "text": BOOK, "cache_control": EPH}]
    messages = with_breakpoint_on_last(_blocks([user(BOOK), {"role": "assistant", "content": "x"}, user("y")]))
    cache = PromptCache()
    first = cache.account(body(messages, system=system))
    system_tokens = sum(b.tokens for b in blocks_of(body([], system=system)))
    other = cache.account(body(messages, system=system, tool_choice={"type": "any"}))
    assert other["cache_read_input_tokens"] == system_tokens < first["cache_creation_input_tokens"]


def test_automatic_caching_puts_the_breakpoint_on_the_last_block():
    cache = PromptCache()
    req = body(_blocks([user(BOOK)]), cache_control=EPH)
    written = cache.account(req)["cache_creation_input_tokens"]
    assert written == sum(b.tokens for b in blocks_of(req)) > 0
    assert cache.account(req)["cache_read_input_tokens"] == written


@pytest.mark.timeout(60)
def test_the_sdk_receives_the_accounted_usage_from_the_caching_server():
    import anthropic

    with CachingServer() as server:
        server.add(message_events([{"type": "text", "text": "one"}]), message_events([{"type": "text", "text": "two"}]))
        client = anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0)
        replies = []
        for q in ("first?", "second?"):
            with client.messages.stream(
                model="claude-sonnet-4-5", max_tokens=10, system=book_system(), messages=[user(q)]
            ) as stream:
                replies.append(stream.get_final_message())
        written = replies[0].usage.cache_creation_input_tokens
        assert written and written > 10_000
        assert replies[1].usage.cache_read_input_tokens == written
        assert replies[1].usage.cache_creation_input_tokens == 0
        assert server.usages[1]["cache_read_input_tokens"] == written
        # A request the API refuses gets its 400, which the SDK raises.
        server.add(message_events([{"type": "text", "text": "never"}]))
        five = [{"type": "text", "text": f"p{i}", "cache_control": EPH} for i in range(5)]
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
            client.messages.create(
                model="claude-sonnet-4-5", max_tokens=10, system=five, messages=[user("q")], stream=True
            )
