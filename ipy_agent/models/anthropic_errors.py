"""How the Anthropic SDK's failures become a `ModelError` the person can act on.

The person sees the message, not a traceback, so each failure says what happened and what to
do next: credentials rejected, a model the key may not use, an overloaded API or a rate limit
(wait), a conversation too long for the window (the context manager compacts and retries on
`kind="context_too_long"`), a connection that failed or broke mid-stream. `kind` is the closed
set of models/base.py. Anything that is not an API or transport failure is a bug and keeps its
traceback (`to_model_error` returns None). A missing key is caught before any request
(anthropic.py).
"""

from __future__ import annotations

import re
from typing import Any

from .base import ModelError

__all__ = ["to_model_error"]


# API error `type` values (the body's error.type, also sent in a mid-stream `error` event).
_TYPE_KIND = {
    "authentication_error": "authentication",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "request_too_large": "context_too_long",
    "invalid_request_error": "invalid_request",
}
_STATUS_KIND = {
    400: "invalid_request",
    401: "authentication",
    403: "permission",
    404: "not_found",
    413: "context_too_long",
    429: "rate_limit",
    529: "overloaded",
}
_CONTEXT_HINT = re.compile(r"prompt is too long|context (window|length)|too many tokens|exceeds? the context", re.I)


def to_model_error(err: BaseException, *, model: str, client: Any) -> ModelError | None:
    """The ModelError for an SDK or transport failure; None for anything else (a bug)."""
    import anthropic
    import httpx2

    retries = getattr(client, "max_retries", 0)
    after = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
    if isinstance(err, (anthropic.APIConnectionError, httpx2.TransportError)):
        where = str(getattr(client, "base_url", "the Anthropic API"))
        if isinstance(err, (anthropic.APITimeoutError, httpx2.TimeoutException)):
            detail = "timed out"
        else:  # the SDK's own text is a bare "Connection error."; the cause says which
            detail = str(err.__cause__ or err).rstrip(".") or type(err).__name__
        if not isinstance(err, anthropic.APIConnectionError):  # broken mid-stream; the SDK does not retry that
            return ModelError(
                f"The connection to the Anthropic API at {where!r} broke in the middle of the "
                f"response ({detail}). Run the prompt again.",
                kind="connection",
            )
        return ModelError(
            f"Could not reach the Anthropic API at {where!r}{after}: {detail}. "
            "Check the network connection (and ANTHROPIC_BASE_URL if you set it), then run again.",
            kind="connection",
        )
    if not isinstance(err, anthropic.APIStatusError):
        if isinstance(err, anthropic.AnthropicError):
            return ModelError(f"The Anthropic client failed: {err}. Run the prompt again.", kind="other")
        return None
    status = err.status_code
    detail = err.api_message or str(err)
    kind = _TYPE_KIND.get(err.type or "") or _STATUS_KIND.get(status) or "other"
    if kind in ("invalid_request", "context_too_long") and (_CONTEXT_HINT.search(detail) or status == 413):
        kind = "context_too_long"
    # A mid-stream `error` event arrives on a 200 response and is not retried; say so.
    code = f"HTTP {status}" if status >= 400 else "error event during the response"
    after = after if status >= 400 else ""
    messages = {
        "authentication": f"The Anthropic API rejected the credentials ({code}: {detail}). "
        "Check that ANTHROPIC_API_KEY holds a valid key (https://console.anthropic.com).",
        "permission": f"The API key may not use {model!r} or this feature ({code}: {detail}). "
        "Use a key whose workspace has access, or choose another model with IPY_AGENT_MODEL.",
        "not_found": f"Model {model!r} was not found ({code}: {detail}). Choose a model your key can use: "
        "pass model=... or set IPY_AGENT_MODEL.",
        "overloaded": f"The Anthropic API is overloaded ({code}{after}: {detail}). Wait a minute and run again.",
        "rate_limit": f"Rate limit reached ({code}{after}: {detail}). Wait a minute and run again, "
        "or lower the request rate.",
        "context_too_long": f"The conversation is too long for {model!r} ({code}: {detail}). "
        "Start a new conversation, or remove large tool results from the history, and run again.",
        "invalid_request": f"The Anthropic API rejected the request ({code}: {detail}). "
        "Check the model options (max_tokens, thinking) and the conversation.",
        "other": f"The Anthropic API failed ({code}{after}: {detail}). Run the prompt again; "
        "if it keeps failing, see https://status.anthropic.com.",
    }
    return ModelError(messages[kind], kind=kind)
