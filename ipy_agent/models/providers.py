"""Model names with a provider: `bedrock:...`, `ollama:llama3.2`, ... as `%agent --model` takes them.

A name is `PROVIDER:MODEL`, or a bare Claude model name (Anthropic's API). The provider picks the
class and its defaults; the rest is the model's name as that provider spells it (which may hold
colons of its own: `bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0`, `ollama:llama3.2:1b`).
Options for a provider (a base URL, a context window, prices, a region) come from the
`options` mapping (`%config AgentMagics.providers = {"ollama": {"base_url": ...}}`), then the
environment. `providers_text` is what `%agent --model ?` prints: every provider, an example,
and whether what it needs is there.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base import Model
from .platforms import PLATFORMS

__all__ = ["PROVIDERS", "Provider", "model_from_spec", "parse_spec", "providers_text"]


@dataclass(frozen=True, kw_only=True)
class Provider:
    name: str
    title: str
    example: str
    needs: str  # what to set, said when it is missing
    base_url: str = ""  # OpenAI-compatible servers: the default address
    url_env: str = ""  # the variable that overrides it


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(
            name="anthropic", title="Anthropic API", example="anthropic:claude-sonnet-4-5", needs="ANTHROPIC_API_KEY"
        ),
        Provider(
            name="bedrock",
            title="Amazon Bedrock",
            example="bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            needs="boto3, AWS credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE or AWS_BEARER_TOKEN_BEDROCK), AWS_REGION",
        ),
        Provider(
            name="vertex",
            title="Google Vertex AI",
            example="vertex:claude-sonnet-4-5@20250929",
            needs="google-auth, application default credentials, CLOUD_ML_REGION, ANTHROPIC_VERTEX_PROJECT_ID",
        ),
        Provider(
            name="foundry",
            title="Microsoft Foundry",
            example="foundry:claude-sonnet-4-5",
            needs="ANTHROPIC_FOUNDRY_API_KEY, ANTHROPIC_FOUNDRY_RESOURCE",
        ),
        Provider(
            name="openai",
            title="OpenAI, or any OpenAI-compatible service",
            example="openai:gpt-4o-mini",
            needs="openai package, OPENAI_API_KEY (or OPENAI_BASE_URL for another service)",
            url_env="OPENAI_BASE_URL",
        ),
        Provider(
            name="ollama",
            title="Ollama",
            example="ollama:llama3.2",
            needs="openai package, a running `ollama serve`",
            base_url="http://127.0.0.1:11434/v1",
            url_env="OLLAMA_HOST",
        ),
        Provider(
            name="vllm",
            title="vLLM",
            example="vllm:Qwen/Qwen2.5-7B-Instruct",
            needs="openai package, `vllm serve MODEL --enable-auto-tool-choice --tool-call-parser ...`",
            base_url="http://127.0.0.1:8000/v1",
            url_env="IPY_AGENT_VLLM_URL",
        ),
        Provider(
            name="llamacpp",
            title="llama.cpp's server",
            example="llamacpp:local",
            needs="openai package, `llama-server -m MODEL.gguf --jinja`",
            base_url="http://127.0.0.1:8080/v1",
            url_env="IPY_AGENT_LLAMACPP_URL",
        ),
        Provider(
            name="lmstudio",
            title="LM Studio",
            example="lmstudio:qwen2.5-7b-instruct",
            needs="openai package, LM Studio's local server",
            base_url="http://127.0.0.1:1234/v1",
            url_env="IPY_AGENT_LMSTUDIO_URL",
        ),
        Provider(name="scripted", title="a transcript replayed offline", example="scripted:demo.json", needs=""),
    )
}


def parse_spec(spec: str) -> tuple[str, str]:
    """(provider, model name) of `spec`; a name without a known provider is Anthropic's."""
    spec = spec.strip()
    head, sep, rest = spec.partition(":")
    if sep and head.lower() in PROVIDERS:
        return head.lower(), rest.strip()
    return "anthropic", spec


def model_from_spec(spec: str, options: Mapping[str, Mapping[str, Any]] | None = None) -> Model:
    """The model `spec` names, made with the options configured for its provider; ValueError
    with what to write instead for a name that cannot be a model."""
    provider, name = parse_spec(spec)
    kwargs = dict((options or {}).get(provider, {}))
    if provider == "scripted":
        from .scripted import ScriptedModel

        if not name:
            raise ValueError("scripted: needs a transcript path, e.g. --model scripted:demo.json")
        return ScriptedModel.from_file(name, **kwargs)
    if provider in PLATFORMS:
        from .anthropic import AnthropicModel

        return _made(AnthropicModel, provider, name or None, platform=provider, **kwargs)
    from .openai import OpenAIModel

    if not name:
        raise ValueError(f"{provider}: needs a model name, e.g. --model {PROVIDERS[provider].example}")
    kwargs.setdefault("base_url", base_url(provider))
    kwargs.setdefault("provider", provider)
    return _made(OpenAIModel, provider, name, **kwargs)


def _made(cls: Any, which: str, name: str | None, **kwargs: Any) -> Model:
    try:
        model: Model = cls(name, **kwargs)
    except TypeError as e:
        raise ValueError(f"the options configured for {which} do not fit {cls.__name__}: {e}") from None
    return model


def base_url(provider: str) -> str | None:
    """The address of an OpenAI-compatible provider: its variable, else its default (None:
    the openai package's own default and OPENAI_BASE_URL)."""
    info = PROVIDERS[provider]
    value = os.environ.get(info.url_env, "").strip() if info.url_env else ""
    if provider == "ollama" and value:
        value = value if "://" in value else f"http://{value}"
        value = value.rstrip("/") + ("" if value.rstrip("/").endswith("/v1") else "/v1")
    return value or info.base_url or None


def providers_text(current: str, options: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """What `%agent --model ?` prints: the model in use, and each provider with an example and
    whether what it needs is there."""
    options = options or {}
    lines = [
        f"Model now: {current or 'the default Claude model on the Anthropic API'} "
        "(set with %agent --model, AgentMagics.model or IPY_AGENT_MODEL).",
        "",
        "Providers (--model PROVIDER:MODEL; a bare name is Anthropic's):",
    ]
    width = max(len(p.example) for p in PROVIDERS.values())
    for p in PROVIDERS.values():
        ready, missing = _ready(p)
        where = f" at {options.get(p.name, {}).get('base_url') or base_url(p.name)}" if p.base_url else ""
        state = "ready" if ready else f"needs {missing}" if missing else ""
        configured = " (options: " + ", ".join(sorted(options[p.name])) + ")" if p.name in options else ""
        lines.append(f"  {p.example:<{width}}  {p.title}{where}{configured}" + (f": {state}" if state else ""))
    return "\n".join(lines)


def _ready(p: Provider) -> tuple[bool, str]:
    env = os.environ
    checks: dict[str, list[tuple[bool, str]]] = {
        "anthropic": [(bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN")), "ANTHROPIC_API_KEY")],
        "bedrock": [
            (_has("botocore"), "pip install 'ipy_agent[bedrock]'"),
            (
                any(env.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK")),
                "AWS credentials",
            ),
            (bool(env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")), "AWS_REGION"),
        ],
        "vertex": [
            (_has("google.auth"), "pip install 'ipy_agent[vertex]'"),
            (bool(env.get("CLOUD_ML_REGION")), "CLOUD_ML_REGION"),
            (bool(env.get("ANTHROPIC_VERTEX_PROJECT_ID")), "ANTHROPIC_VERTEX_PROJECT_ID"),
        ],
        "foundry": [
            (bool(env.get("ANTHROPIC_FOUNDRY_API_KEY")), "ANTHROPIC_FOUNDRY_API_KEY"),
            (bool(env.get("ANTHROPIC_FOUNDRY_RESOURCE") or env.get("ANTHROPIC_FOUNDRY_BASE_URL")), "a resource"),
        ],
        "openai": [
            (_has("openai"), "pip install 'ipy_agent[openai]'"),
            (bool(env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL")), "OPENAI_API_KEY"),
        ],
    }
    if p.name == "scripted":
        return True, ""
    found = checks.get(p.name, [(_has("openai"), "pip install 'ipy_agent[openai]'")])
    missing = [what for ok, what in found if not ok]
    return not missing, ", ".join(missing)


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
