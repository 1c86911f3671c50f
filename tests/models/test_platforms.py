"""Claude on the clouds and model names with a provider: credentials, prices, and what is listed."""

from __future__ import annotations

import json

import pytest

from ipy_agent import Agent
from ipy_agent.models.anthropic import AnthropicModel
from ipy_agent.models.base import ModelError, ModelRequest, Usage, model_label
from ipy_agent.models.openai import OpenAIModel
from ipy_agent.models.pricing import canonical_name, claude_cost, context_window, price_for
from ipy_agent.models.providers import PROVIDERS, model_from_spec, parse_spec, providers_text
from ipy_agent.models.scripted import ScriptedModel
from tests.support.sse_server import ReplayServer, message_events
from tests.support.wire_servers import BedrockServer, bedrock_exception
from tests.support.wires import BEDROCK_MODEL, VERTEX_MODEL, Wire


@pytest.mark.parametrize(
    ("spec", "provider", "name"),
    [
        ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        (
            "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
        ("ollama:llama3.2:1b", "ollama", "llama3.2:1b"),
        ("Vertex:claude-opus-4-5@20251101", "vertex", "claude-opus-4-5@20251101"),
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
    ],
)
def test_a_model_name_names_its_provider(spec, provider, name):
    assert parse_spec(spec) == (provider, name)


def test_each_provider_makes_its_model(monkeypatch, tmp_path):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    ollama = model_from_spec("ollama:llama3.2", {"ollama": {"context_window": 8192}})
    assert isinstance(ollama, OpenAIModel) and ollama.base_url == "http://gpu-box:11434/v1"
    assert (model_label(ollama), ollama.context_window) == ("ollama:llama3.2", 8192)
    monkeypatch.delenv("OLLAMA_HOST")
    assert model_from_spec("ollama:llama3.2").base_url == "http://127.0.0.1:11434/v1"
    bedrock = model_from_spec("bedrock:" + BEDROCK_MODEL, {"bedrock": {"aws_region": "eu-west-1"}})
    assert isinstance(bedrock, AnthropicModel) and bedrock.platform == "bedrock"
    assert bedrock.where == "Amazon Bedrock (eu-west-1)" and model_label(bedrock) == f"bedrock:{BEDROCK_MODEL}"
    assert model_from_spec("vertex:").name.startswith("claude-"), "a platform's default model"
    assert model_from_spec("bedrock:").name.startswith("global.anthropic.claude-")
    (tmp_path / "t.json").write_text(json.dumps({"turns": ["hi"]}))
    assert isinstance(model_from_spec(f"scripted:{tmp_path / 't.json'}"), ScriptedModel)
    with pytest.raises(ValueError, match="needs a model name"):
        model_from_spec("ollama:")
    with pytest.raises(ValueError, match="do not fit AnthropicModel"):
        model_from_spec("bedrock:x", {"bedrock": {"thinking": "yes", "max_tokens": 1, "betas": (), "model": "y"}})


def test_the_listing_names_every_provider_and_what_is_missing(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "AWS_REGION", "AWS_DEFAULT_REGION", "CLOUD_ML_REGION"):
        monkeypatch.delenv(name, raising=False)
    text = providers_text("ollama:llama3.2", {"ollama": {"base_url": "http://gpu:11434/v1"}})
    assert text.startswith("Model now: ollama:llama3.2")
    for p in PROVIDERS.values():
        assert p.example in text
    assert "Ollama at http://gpu:11434/v1 (options: base_url)" in text
    assert "needs ANTHROPIC_API_KEY" in text and "AWS_REGION" in text


def test_cloud_names_get_claude_prices_and_regional_endpoints_cost_more():
    assert canonical_name("us.anthropic.claude-3-5-haiku-20241022-v1:0") == "claude-3-5-haiku-20241022"
    assert canonical_name("claude-opus-4-5@20251101") == "claude-opus-4-5"
    assert price_for("anthropic.claude-3-5-haiku-20241022-v1:0").input == 0.8
    assert context_window("global.anthropic.claude-sonnet-4-6") == 1_000_000
    usage = Usage(input_tokens=1_000_000)
    assert claude_cost("claude-sonnet-4-5", usage).usd == pytest.approx(3.0)
    regional = claude_cost("claude-sonnet-4-5", usage, regional=True)
    assert regional.usd == pytest.approx(3.3) and "regional" in regional.note
    assert claude_cost("claude-3-5-sonnet", usage, regional=True).usd == pytest.approx(3.0), "no surcharge before 4.5"
    us = AnthropicModel("us.anthropic.claude-sonnet-4-5-20250929-v1:0", platform="bedrock", aws_region="us-east-1")
    world = AnthropicModel(
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0", platform="bedrock", aws_region="us-east-1"
    )
    assert us.cost(usage).usd == pytest.approx(3.3) and world.cost(usage).usd == pytest.approx(3.0)
    vertex = AnthropicModel(VERTEX_MODEL, platform="vertex", region="global", project_id="p")
    assert vertex.cost(usage).usd == pytest.approx(3.0)


async def test_vertex_uses_google_application_default_credentials_offline(tmp_path, monkeypatch):
    """The google-auth path, offline: application default credentials of a service account whose
    token endpoint is the local server, so the client gets its access token the way it would
    from Google (a signed assertion exchanged for a token)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with ReplayServer() as server:
        server.pages["/token"] = (200, {"access_token": "ya29.from-adc", "expires_in": 3600, "token_type": "Bearer"})
        adc = tmp_path / "adc.json"
        adc.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "adc-project",
                    "private_key_id": "k1",
                    "private_key": pem.decode(),
                    "client_email": "agent@adc-project.iam.gserviceaccount.com",
                    "client_id": "1",
                    "token_uri": f"{server.url}/token",
                }
            )
        )
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
        monkeypatch.setenv("CLOUD_ML_REGION", "global")
        monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "test-project")
        server.add(message_events([{"type": "text", "text": "Hello from Vertex."}]))
        model = AnthropicModel(VERTEX_MODEL, platform="vertex", base_url=server.url, max_retries=0)
        result = await Agent(model=model, cwd=tmp_path, tools=[]).arun("hi")
        await model.aclose()
    assert result.text == "Hello from Vertex.", result.error
    assert server.requests[0].headers["authorization"] == "Bearer ya29.from-adc"
    assert "/projects/test-project/locations/global/" in server.requests[0].path


async def test_bedrock_without_credentials_says_what_to_set(tmp_path, monkeypatch):
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata lookup: no network
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    with BedrockServer() as server:
        model = AnthropicModel(BEDROCK_MODEL, platform="bedrock", aws_region="us-east-1", base_url=server.url)
        result = await Agent(model=model, cwd=tmp_path, tools=[]).arun("hi")
    assert result.error_kind == "missing_key" and "Amazon Bedrock" in (result.error or "")
    assert "AWS_ACCESS_KEY_ID" in (result.error or "") and server.requests == []


async def test_a_throttling_frame_in_the_bedrock_stream_is_a_rate_limit(tmp_path):
    wire = Wire("bedrock")
    with wire.server() as server:
        events = wire.reply([{"type": "text", "text": "Half an ans"}], end=False)
        server.add([*events, bedrock_exception("throttlingException", "Too many tokens, please wait.")])
        model = wire.model(server)
        result = await Agent(model=model, cwd=tmp_path, tools=[]).arun("hi")
        await model.aclose()
    assert result.error_kind == "rate_limit" and "Too many tokens" in (result.error or "")


async def test_bedrock_cannot_count_tokens_and_is_asked_once(tmp_path):
    model = AnthropicModel(BEDROCK_MODEL, platform="bedrock", aws_region="us-east-1")
    with pytest.raises(ModelError, match="cannot count tokens"):
        await model.count_tokens(ModelRequest(system="", messages=[], tools=[]))
