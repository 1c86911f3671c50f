"""OpenAIModel: the translation both ways, what a server says about the model, and a model
that cannot call tools, against a local Chat Completions server with the real openai client."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from ipy_agent import Agent, OpenAIModel
from ipy_agent.models.base import ModelError, ModelRequest, TextDelta, ThinkingDelta
from ipy_agent.models.openai_wire import ChatFolder, chat_messages, chat_tools
from tests.support.sse_server import Event, Reply
from tests.support.wire_servers import OpenAIServer, chat_events

PNG = base64.b64encode(b"\x89PNG fake image bytes" * 40).decode()
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
TOOLS = [{"name": "Read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {}}}]


@pytest.fixture
def server():
    with OpenAIServer() as s:
        s.pages["/api/show"] = (404, {"error": "not Ollama"})
        yield s


@pytest.fixture
async def made():
    models: list[OpenAIModel] = []
    yield models
    for m in models:
        await m.aclose()


def model_for(server: OpenAIServer, made: list[OpenAIModel], **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("provider", "ollama")
    m = OpenAIModel("llama3.2", base_url=f"{server.url}/v1", max_retries=0, **kwargs)
    made.append(m)
    return m


def request(messages: list[dict[str, Any]], tools=TOOLS) -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=messages, tools=tools)


def test_a_conversation_translates_to_chat_messages():
    history = [
        {"role": "user", "content": [{"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}}, IMAGE]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.png"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "an image"}, IMAGE],
                },
                {"type": "text", "text": "and?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": True}],
        },
    ]
    out = chat_messages("Be brief.", history, vision=True)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "user", "assistant", "tool"]
    assert out[1]["content"][0] == {"type": "text", "text": "look"}
    assert out[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert out[2] == {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a.png"}'}}
        ],
    }
    assert out[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "an image"}
    assert out[4]["content"][0]["text"].startswith("The image below came with the result of tool call toolu_1")
    assert out[4]["content"][1]["type"] == "image_url" and out[4]["content"][2] == {"type": "text", "text": "and?"}
    assert out[6] == {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: no such file"}

    blind = chat_messages("", history[:1], vision=False)
    assert blind == [
        {"role": "user", "content": "look\n\n[image (image/png, 1 KB): not shown, this model does not take images]"}
    ]
    assert chat_tools(TOOLS) == [
        {
            "type": "function",
            "function": {"name": "Read", "description": "Read a file.", "parameters": TOOLS[0]["input_schema"]},
        }
    ]


def test_streamed_tool_calls_complete_when_the_next_one_starts():
    folder = ChatFolder("m", "a server")

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    events = folder.feed(chunk({"reasoning_content": "thinking..."}))
    events += folder.feed(chunk({"content": "Two reads."}))
    events += folder.feed(
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "Read", "arguments": '{"a"'}}]})
    )
    events += folder.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}))
    assert [type(e).__name__ for e in events] == ["ThinkingDelta", "TextDelta", "BlockComplete"]
    started = folder.feed(
        chunk({"tool_calls": [{"index": 1, "function": {"name": "Grep", "arguments": '"{\\"b\\": 2}"'}}]})
    )
    assert [e.block for e in started] == [{"type": "tool_use", "id": "c1", "name": "Read", "input": {"a": 1}}]
    folder.feed(
        chunk(
            {},
            "stop",
            usage={"prompt_tokens": 50, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 30}},
        )
    )
    rest, final = folder.done()
    assert rest[0].block == {"type": "tool_use", "id": "call_2", "name": "Grep", "input": {"b": 2}}
    assert final.stop_reason == "tool_use", "calls count even when the server says stop"
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens, final.usage.output_tokens) == (20, 30, 9)
    assert isinstance(events[0], ThinkingDelta) and isinstance(events[1], TextDelta)


def test_bad_arguments_and_a_stream_cut_short_are_errors():
    folder = ChatFolder("m", "a server")
    folder.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"name": "Read", "arguments": "{oops"}}]},
                }
            ]
        }
    )
    folder.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    with pytest.raises(ModelError, match="not valid JSON"):
        folder.done()
    with pytest.raises(ModelError, match="ended before the message was complete") as e:
        ChatFolder("m", "a server").done()
    assert e.value.kind == "connection"


async def test_the_window_comes_from_the_server(server, made):
    server.pages["/v1/models"] = (200, {"data": [{"id": "llama3.2", "max_model_len": 12_288}]})
    server.add(chat_events([{"type": "text", "text": "hi"}]))
    model = model_for(server, made, provider="vllm")
    assert model.context_window == 32_768, "before the server is asked: the default"
    agent = Agent(model=model, cwd=".", tools=[])
    assert (await agent.arun("hello")).text == "hi"
    assert model.context_window == agent.context_window == 12_288
    assert model_for(server, made, context_window=4096).context_window == 4096, "a setting wins"


async def test_ollama_without_tools_is_said_plainly_before_any_request(server, made, tmp_path):
    server.pages["/api/show"] = (
        200,
        {"capabilities": ["completion"], "model_info": {"gemma.context_length": 8192}, "parameters": "num_ctx 4096"},
    )
    model = model_for(server, made)
    result = await Agent(model=model, cwd=tmp_path).arun("list the files")
    assert result.error_kind == "no_tools" and "ollama:llama3.2 cannot call tools" in (result.error or "")
    assert server.requests == [] and model.context_window == 4096


async def test_a_server_that_refuses_tools_is_said_plainly(server, made, tmp_path):
    server.add(
        Reply(status=400, body={"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools"}})
    )
    result = await Agent(model=model_for(server, made), cwd=tmp_path).arun("list the files")
    assert result.error_kind == "no_tools" and "does not support tools" in (result.error or "")
    assert "tagged 'tools'" in (result.error or "")


async def test_a_tool_call_written_as_text_is_said_plainly(server, made, tmp_path):
    text = 'Sure! {"name": "Glob", "arguments": {"pattern": "*.py"}}'
    server.add(chat_events([{"type": "text", "text": text}]))
    result = await Agent(model=model_for(server, made), cwd=tmp_path).arun("list the python files")
    assert result.error_kind == "no_tools" and "wrote a tool call as text" in (result.error or "")


async def test_a_server_that_refuses_images_gets_notes_from_then_on(server, made):
    server.add(
        Reply(status=400, body={"error": {"message": "This model does not support image input"}}),
        chat_events([{"type": "text", "text": "I cannot see it, but noted."}]),
    )
    model = model_for(server, made)
    events = [
        e async for e in model.stream(request([{"role": "user", "content": [{"type": "text", "text": "see"}, IMAGE]}]))
    ]
    assert events[-1].content == [{"type": "text", "text": "I cannot see it, but noted."}]
    sent = server.requests[-1].body["messages"][-1]["content"]
    assert isinstance(sent, str) and "not shown, this model does not take images" in sent
    assert model.vision is False


async def test_an_error_in_the_stream_ends_the_reply(server, made):
    events = chat_events([{"type": "text", "text": "partial"}], end=False)
    server.add([*events, Event(name="error", data={"error": {"message": "the model crashed"}})])
    model = model_for(server, made)
    with pytest.raises(ModelError, match="the model crashed"):
        [e async for e in model.stream(request([{"role": "user", "content": "hi"}], tools=[]))]
