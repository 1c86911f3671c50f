"""What an OpenAI-compatible server says about a model: its context window and capabilities.

Chat Completions has no field for the context window, so each server says it its own way:
vLLM puts `max_model_len` in `/v1/models`; llama.cpp's server puts the trained length there
(`meta.n_ctx_train`) and the window it runs with in `/props` (`n_ctx`); Ollama's `/api/show`
has the model's capabilities ("tools", "vision"), its trained length and any `num_ctx` set for
it; LM Studio's `/api/v0/models/NAME` has `loaded_context_length`. The window a server runs
with wins over the one the model was trained with. Every question is best effort: a server
that does not answer it (404, another shape, a timeout) leaves it unanswered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ipy_agent.history.blocks import JsonObject, JsonValue

__all__ = ["Found", "discover_model"]

_TIMEOUT = 3.0
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.M)


@dataclass(kw_only=True)
class Found:
    window: int | None = None
    vision: bool | None = None
    tools: bool | None = None
    capabilities: list[str] = field(default_factory=list)


async def discover_model(base_url: str, model: str, api_key: str | None) -> Found:
    """What the server at `base_url` (its /v1 address) says about `model`."""
    import httpx2  # the anthropic and openai SDKs' HTTP client

    found = Found()
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    trained: int | None = None
    async with httpx2.AsyncClient(timeout=_TIMEOUT, headers=headers) as http:
        listed = await _get_json(http, "GET", f"{base_url}/models")
        entry = _entry(listed, model)
        found.window = _int(entry.get("max_model_len")) or _int(entry.get("loaded_context_length"))
        trained = _int(_object(entry.get("meta")).get("n_ctx_train")) or _int(entry.get("context_length"))
        if "api.openai.com" in base_url:
            return found
        shown = await _get_json(http, "POST", f"{root}/api/show", json={"model": model})
        if shown:
            _ollama(shown, found)
            trained = trained or _trained_length(shown)
        props = await _get_json(http, "GET", f"{root}/props")
        settings = _object(props.get("default_generation_settings"))
        found.window = found.window or _int(props.get("n_ctx")) or _int(settings.get("n_ctx"))
        if found.window is None:
            studio = await _get_json(http, "GET", f"{root}/api/v0/models/{model}")
            found.window = _int(studio.get("loaded_context_length")) or _int(studio.get("max_context_length"))
    found.window = found.window or trained
    return found


def _ollama(shown: JsonObject, found: Found) -> None:
    capabilities = shown.get("capabilities")
    if isinstance(capabilities, list):
        found.capabilities = [str(c) for c in capabilities]
        found.tools = "tools" in found.capabilities
        found.vision = "vision" in found.capabilities
    parameters = shown.get("parameters")
    if isinstance(parameters, str) and (m := _NUM_CTX.search(parameters)):
        found.window = found.window or int(m.group(1))


def _trained_length(shown: JsonObject) -> int | None:
    info = shown.get("model_info") or {}
    for key, value in info.items() if isinstance(info, dict) else ():
        if key.endswith(".context_length"):
            return _int(value)
    return None


def _entry(listed: JsonObject, model: str) -> JsonObject:
    entries = listed.get("data")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return entry
    return {}


def _object(value: JsonValue | None) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _int(value: JsonValue | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def _get_json(http: Any, method: str, url: str, **kwargs: Any) -> JsonObject:
    try:
        response = await http.request(method, url, **kwargs)
        if response.status_code != 200:
            return {}
        data = response.json()
    except Exception:  # best effort: any failure is "the server did not say"
        return {}
    return data if isinstance(data, dict) else {}
