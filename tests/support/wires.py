"""One provider's side of the tests: its local server, its model, and its replies and errors.

The same scripted tasks run against each `Wire` (tests/models/test_providers.py): a read-edit task
with an approval, parallel reads, an interrupt, a compaction, and the server's errors. Each wire
makes the model the person would (the real SDK client, its own authentication), the replies
in its own format, and checks what a request carried (path, credentials, body shape).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ipy_agent.models.anthropic import AnthropicModel
from ipy_agent.models.base import Model
from ipy_agent.models.openai import OpenAIModel

from .sse_server import Event, Recorded, ReplayServer, Reply, error_reply, message_events
from .wire_servers import BedrockServer, OpenAIServer, bedrock_error, chat_events

__all__ = ["WIRES", "Wire"]

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"
ERROR_KINDS = ("rate_limit", "overloaded", "context_too_long")


@dataclass(frozen=True)
class Wire:
    name: str

    # -- the server and the model ---------------------------------------------------------
    def server(self) -> ReplayServer:
        if self.name == "bedrock":
            return BedrockServer()
        if self.name == "openai":
            server = OpenAIServer()
            server.pages["/api/show"] = (404, {"error": "not Ollama"})
            return server
        return ReplayServer()

    def model(self, server: ReplayServer, **kwargs: Any) -> Model:
        kwargs.setdefault("max_retries", 0)
        if self.name == "anthropic":
            return AnthropicModel("claude-test-model", api_key="sk-ant-test-key", base_url=server.url, **kwargs)
        if self.name == "foundry":
            return AnthropicModel(
                "claude-sonnet-4-5",
                platform="foundry",
                api_key="foundry-key",
                base_url=f"{server.url}/anthropic",
                **kwargs,
            )
        if self.name == "bedrock":
            return AnthropicModel(
                BEDROCK_MODEL,
                platform="bedrock",
                aws_access_key="AKIDEXAMPLE",
                aws_secret_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                aws_region="us-east-1",
                base_url=server.url,
                **kwargs,
            )
        if self.name == "vertex":
            return AnthropicModel(
                VERTEX_MODEL,
                platform="vertex",
                region="us-east5",
                project_id="test-project",
                access_token="ya29.test-token",
                base_url=server.url,
                **kwargs,
            )
        return OpenAIModel("local-test", base_url=f"{server.url}/v1", api_key="sk-local", provider="vllm", **kwargs)

    # -- replies ----------------------------------------------------------------------------
    @property
    def end_event(self) -> str:
        """The event that says the reply is complete."""
        return "finish" if self.name == "openai" else "message_stop"

    def reply(self, blocks: list[dict[str, Any]], **kwargs: Any) -> list[Event]:
        if self.name == "openai":
            return chat_events(blocks, **kwargs)
        return message_events(blocks, **kwargs)

    def error(self, kind: str) -> Reply:
        """The server's own answer for a rate limit, an overload, or a conversation too long."""
        assert kind in ERROR_KINDS
        if self.name == "bedrock":
            return {
                "rate_limit": bedrock_error(
                    429, "ThrottlingException", "Too many requests, please wait before trying again."
                ),
                "overloaded": bedrock_error(
                    503, "ServiceUnavailableException", "Bedrock is unable to process your request."
                ),
                "context_too_long": bedrock_error(400, "ValidationException", "Input is too long for requested model."),
            }[kind]
        if self.name == "openai":
            status, message = {
                "rate_limit": (429, "Rate limit reached for requests"),
                "overloaded": (503, "The server is overloaded or not ready yet."),
                "context_too_long": (
                    400,
                    "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.",
                ),
            }[kind]
            return Reply(
                status=status, body={"error": {"message": message, "type": "invalid_request_error", "code": None}}
            )
        if self.name == "vertex" and kind == "rate_limit":
            message = (
                "Quota exceeded for aiplatform.googleapis.com/online_prediction_input_tokens_per_minute_per_base_model"
            )
            return Reply(status=429, body={"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}})
        return {
            "rate_limit": error_reply(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"),
            "overloaded": error_reply(529, "overloaded_error", "Overloaded"),
            "context_too_long": error_reply(
                400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
            ),
        }[kind]

    # -- what a request carried -------------------------------------------------------------
    def check_request(self, sent: Recorded) -> None:
        """The request went where this platform sends it, with its credentials and body shape."""
        headers, body = sent.headers, sent.body
        assert body.get("stream") is True or self.name == "bedrock", body.keys()
        if self.name == "anthropic":
            assert sent.path == "/v1/messages"
            assert "sk-ant-test-key" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
        elif self.name == "foundry":
            assert sent.path == "/anthropic/v1/messages"
            assert "foundry-key" in (headers.get("api-key", "") + headers.get("x-api-key", ""))
        elif self.name == "bedrock":
            assert sent.path == f"/model/{BEDROCK_MODEL}/invoke-with-response-stream", sent.path
            auth = headers.get("authorization", "")
            assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), auth
            assert "/us-east-1/bedrock/aws4_request" in auth and "Signature=" in auth
            assert headers.get("x-amz-date") and "model" not in body
            assert body.get("anthropic_version"), "Bedrock takes the API version in the body"
        elif self.name == "vertex":
            where = f"/projects/test-project/locations/us-east5/publishers/anthropic/models/{VERTEX_MODEL}"
            assert sent.path == f"{where}:streamRawPredict", sent.path
            assert headers.get("authorization") == "Bearer ya29.test-token"
            assert body.get("anthropic_version") and "model" not in body
        else:
            assert sent.path == "/v1/chat/completions" and headers.get("authorization") == "Bearer sk-local"
            assert body["model"] == "local-test" and body["messages"][0]["role"] == "system"

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        """The texts of the tool results the request carried, in order."""
        if self.name == "openai":
            return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        out = []
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    out.append(content if isinstance(content, str) else json.dumps(content))
        return out

    def is_summary_request(self, body: dict[str, Any]) -> bool:
        return "summar" in json.dumps(body.get("system", "") or body["messages"][0]).lower()


WIRES = [Wire(name) for name in ("anthropic", "bedrock", "vertex", "foundry", "openai")]
