"""OpenAIModel: any server that speaks OpenAI's Chat Completions, for local and other models.

Ollama, vLLM, llama.cpp's server, LM Studio and hosted services (OpenAI, and the many that copy
its API) all serve `/v1/chat/completions` with streamed tool calls. This model talks to them
through the `openai` package (`pip install 'ipy_agent[openai]'`), translating the agent's
Anthropic-format conversation at its edge (openai_wire.py holds the mapping).

What the agent needs beyond text and tool calls:
- the context window: `context_window=` (or `%config AgentMagics.providers`), else what the
  server says (`discover`: vLLM's `max_model_len`, llama.cpp's `n_ctx`, Ollama's `num_ctx` or
  the model's trained length, LM Studio's loaded length), else a small table of OpenAI models,
  else 32k;
- cost: zero (nothing is charged locally), or from `prices=(input, output)` in USD per million
  tokens;
- a model that cannot call tools is said plainly on the first turn: the server refuses tools (a
  400 that names them), Ollama lists no "tools" capability, or the model writes a call as text
  instead of making it (kind "no_tools");
- images: content parts where the model takes them (`vision=True`, Ollama's "vision"
  capability; by default tried, and a server that refuses them gets text notes from then on).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from typing import Any, NoReturn, TypedDict

from ipy_agent.history.blocks import JsonObject

from .base import Cost, MessageComplete, ModelError, ModelEvent, ModelRequest, Usage
from .openai_wire import ChatFolder, chat_messages, chat_tools
from .pricing import Prices, usd_for

__all__ = ["DEFAULT_WINDOW", "OpenAIModel"]

DEFAULT_WINDOW = 32_768
OPENAI_URL = "https://api.openai.com/v1"
# Windows of OpenAI's own models, by name prefix (longest first wins).
_KNOWN_WINDOWS = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
}
_NO_TOOLS = re.compile(
    r"does not support tools|tools? (are|is) not supported|--jinja|auto-tool-choice|tool.?call.?parser", re.I
)
_TOO_LONG = re.compile(
    r"context.?(length|window|size)|too many tokens|prompt is too long|exceeds? (the )?(available )?context|maximum context",
    re.I,
)
_NO_IMAGES = re.compile(r"image|vision|multimodal|multi-modal", re.I)
# A tool call written as text: {"name": "Read", ...}, <tool_call>, or a ```json block naming a tool.
_CALL_AS_TEXT = re.compile(r"<tool_call>|\"(name|function)\"\s*:\s*\"(?P<name>[\w-]+)\"", re.I)
_STATUS_KIND = {401: "authentication", 403: "permission", 404: "not_found", 413: "context_too_long", 429: "rate_limit"}


class ChatParams(TypedDict, total=False):
    """The keyword arguments of the SDK's `chat.completions.create` that the agent sends."""

    model: str
    messages: list[JsonObject]
    stream: bool
    stream_options: JsonObject
    tools: list[JsonObject]
    max_tokens: int
    extra_body: JsonObject


class OpenAIModel:
    """A Chat Completions server as a Model (see the module docstring).

    `model`: the name the server knows ("gpt-4o-mini", "llama3.2", "Qwen/Qwen2.5-7B-Instruct").
    `base_url`: the server's `/v1` address; default OPENAI_BASE_URL, else OpenAI's.
    `api_key`: default OPENAI_API_KEY; a local server that needs none gets a placeholder.
    `provider`: the name shown with the model ("openai", "ollama", "vllm", ...).
    `max_tokens`: sent when given (default: the server's own limit).
    `extra_body`: more fields for every request (e.g. `{"options": {"num_ctx": 32768}}`).
    `client`: an `openai.AsyncOpenAI` to use as is; else one is made from `client_kwargs`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        provider: str = "openai",
        context_window: int | None = None,
        prices: tuple[float, float] | Prices | None = None,
        max_tokens: int | None = None,
        vision: bool | None = None,
        extra_body: JsonObject | None = None,
        client: Any = None,
        **client_kwargs: Any,
    ) -> None:
        if not model:
            raise ValueError("OpenAIModel needs a model name, e.g. OpenAIModel('llama3.2', base_url=...)")
        self._name = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        self.api_key = api_key
        self.provider = provider
        self.window_setting = context_window
        self.window_found: int | None = None
        self.prices = Prices(input=prices[0], output=prices[1]) if isinstance(prices, tuple) else prices
        self.max_tokens = max_tokens
        self.vision = vision
        self.extra_body = dict(extra_body or {})
        self.cannot_call_tools = ""  # why, when discover() or a reply showed it
        self.called_tools = False  # a real tool call was seen: the text check is off from then on
        self._client = client
        self._client_is_ours = client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._client_kwargs = {"max_retries": 2, **client_kwargs}

    @property
    def name(self) -> str:
        return self._name

    @property
    def where(self) -> str:
        return f"an OpenAI-compatible server at {self.base_url}"

    def __repr__(self) -> str:
        return f"OpenAIModel({self._name!r}, base_url={self.base_url!r})"

    @property
    def context_window(self) -> int:
        if self.window_setting:
            return self.window_setting
        if self.window_found:
            return self.window_found
        known = [w for prefix, w in _KNOWN_WINDOWS.items() if self._name.startswith(prefix)]
        return known[-1] if known else DEFAULT_WINDOW

    def cost(self, usage: Usage) -> Cost:
        if self.prices is not None:
            return Cost(usd=usd_for(self.prices, usage), note="prices from settings")
        if self.base_url == OPENAI_URL:
            return Cost(usd=None, note="no prices set: prices=(input, output) in USD per million tokens")
        return Cost(usd=None, note="local or self-hosted model")

    # -- the client --------------------------------------------------------------------------

    def _get_client(self) -> Any:
        if not self._client_is_ours:
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            key = self.api_key or os.environ.get("OPENAI_API_KEY")
            if not key and self.base_url == OPENAI_URL:
                raise ModelError(
                    "No OpenAI API key found: set OPENAI_API_KEY, or give base_url= for a local server "
                    "(Ollama: ollama:MODEL).",
                    kind="missing_key",
                )
            try:
                import openai  # deferred: importing the SDK is slow
            except ImportError:
                raise ModelError(
                    "OpenAI-compatible models need the openai package: pip install 'ipy_agent[openai]', "
                    "then restart the kernel.",
                    kind="missing_key",
                ) from None
            try:
                self._client = openai.AsyncOpenAI(
                    base_url=self.base_url, api_key=key or "not-needed", **self._client_kwargs
                )
            except TypeError as e:
                raise ModelError(f"The options for {self.provider} do not fit the openai client: {e}") from None
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client_is_ours and self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # -- what the server says about the model ------------------------------------------------

    async def discover(self) -> None:
        """Ask the server for the context window and, on Ollama, the model's capabilities.
        Best effort: a server that does not say keeps the defaults."""
        from .openai_discovery import discover_model

        found = await discover_model(self.base_url, self._name, self.api_key or os.environ.get("OPENAI_API_KEY"))
        self.window_found = found.window or self.window_found
        if found.vision is not None and self.vision is None:
            self.vision = found.vision
        if found.tools is False:
            self.cannot_call_tools = f"the server lists the model's capabilities as {', '.join(found.capabilities)}"

    # -- the stream ----------------------------------------------------------------------------

    def request_params(self, request: ModelRequest) -> ChatParams:
        params: ChatParams = {
            "model": self._name,
            "messages": chat_messages(request.system, request.messages, vision=self.vision is not False),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = chat_tools(request.tools)
        if self.max_tokens:
            params["max_tokens"] = self.max_tokens
        if self.extra_body:
            params["extra_body"] = dict(self.extra_body)
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self.cannot_call_tools and request.tools:
            self._no_tools(self.cannot_call_tools)
        client = self._get_client()
        response = await self._open(client, request)
        folder = ChatFolder(self._name, self.where)
        try:
            async for chunk in response:
                for event in folder.feed(chunk.model_dump() if hasattr(chunk, "model_dump") else dict(chunk)):
                    yield event
        except ModelError:
            raise
        except Exception as err:
            self._raise(err, client)
        finally:
            await response.close()
        events, final = folder.done()
        for event in events:
            yield event
        self._check_tool_use(request, final)
        yield final

    async def _open(self, client: Any, request: ModelRequest) -> Any:
        params = self.request_params(request)
        try:
            return await client.chat.completions.create(**params)
        except Exception as err:
            refused_images = getattr(err, "status_code", 0) == 400 and _NO_IMAGES.search(_message(err))
            if (
                refused_images
                and self.vision is None
                and any(isinstance(m.get("content"), list) for m in params["messages"])
            ):
                self.vision = False  # the server refused images: notes from now on
                return await self._open(client, request)
            self._raise(err, client)

    def _check_tool_use(self, request: ModelRequest, final: MessageComplete) -> None:
        if self.called_tools or not request.tools or request.purpose != "turn":
            return
        if any(b.get("type") == "tool_use" for b in final.content):
            self.called_tools = True
            return
        text = "".join(str(b.get("text", "")) for b in final.content if b.get("type") == "text")
        names = {t["name"] for t in request.tools}
        found = _CALL_AS_TEXT.search(text)
        if found and (found.group("name") in names or "<tool_call>" in found.group(0)):
            self._no_tools(f"it wrote a tool call as text instead of making it: {text.strip()[:160]!r}")

    def _no_tools(self, why: str) -> NoReturn:
        raise ModelError(
            f"{self.provider}:{self._name} cannot call tools ({why}). ipy_agent works through tools, so it needs a "
            "model that calls them: on Ollama one tagged 'tools' (llama3.1, llama3.2, qwen2.5, ...); for llama.cpp's "
            "server, start it with --jinja; for vLLM, with --enable-auto-tool-choice and a --tool-call-parser.",
            kind="no_tools",
        )

    def _raise(self, err: Exception, client: Any) -> NoReturn:
        import openai

        where = f"{self.provider} at {self.base_url}"
        if isinstance(err, openai.APIConnectionError):
            hint = " Is Ollama running (`ollama serve`)?" if self.provider == "ollama" else ""
            raise ModelError(
                f"Could not reach {where}: {err.__cause__ or err}.{hint} Check the address (base_url), then run again.",
                kind="connection",
            ) from err
        if not isinstance(err, openai.APIStatusError):
            if isinstance(err, openai.OpenAIError):
                raise ModelError(f"The client for {where} failed: {err}. Run the prompt again.") from err
            raise err
        status, detail = err.status_code, _message(err)
        kind = _STATUS_KIND.get(status) or ("overloaded" if status in (502, 503, 529) else "other")
        if status in (400, 413, 422) and _TOO_LONG.search(detail):
            kind = "context_too_long"
        elif status in (400, 422) and _NO_TOOLS.search(detail):
            self._no_tools(f"the server said: {detail}")
        elif status in (400, 422):
            kind = "invalid_request"
        advice = {
            "authentication": "Check the API key (OPENAI_API_KEY, or api_key=).",
            "not_found": f"Check the model name{' (`ollama pull ' + self._name + '`)' if self.provider == 'ollama' else ''}.",
            "rate_limit": "Wait a minute and run again.",
            "overloaded": "The server is busy; wait a minute and run again.",
            "context_too_long": "The conversation is too long for this model's context window.",
        }.get(kind, "Run the prompt again.")
        raise ModelError(f"{where} answered HTTP {status}: {detail}. {advice}", kind=kind) from err


def _message(err: Exception) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(err, "message", "") or err)
