"""How the Anthropic SDK's failures become a `ModelError` the person can act on.

The person sees the message, not a traceback, so each failure says what happened and what to
do next: credentials rejected, a model the key may not use, an overloaded API or a rate limit
(wait), a conversation too long for the window (the context manager compacts and retries on
`kind="context_too_long"`), a connection that failed or broke mid-stream. `kind` is the closed
set of models/base.py. Anything that is not an API or transport failure is a bug and keeps its
traceback (`to_model_error` returns None). A missing key is caught before any request
(platforms.py); credentials a cloud's client fails to find at request time (AWS, Google) are
reported the same way.

The clouds report the same failures their own way: Bedrock names its errors
`ThrottlingException`, `ServiceUnavailableException`, `ValidationException` (also inside the
event stream), Vertex sends Google's `RESOURCE_EXHAUSTED`; they map to the same kinds, and the
message names the platform and what to check there.
"""

from __future__ import annotations

import re
from typing import Any

from .base import ModelError
from .platforms import PLATFORMS, Platform

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
    # ipy_agent's key gateway (python -m ipy_agent.gateway) refusing a request over budget
    "budget_exceeded_error": "budget_exceeded",
    # Bedrock's exception names (HTTP x-amzn-errortype, or an exception frame in the stream)
    "throttlingexception": "rate_limit",
    "servicequotaexceededexception": "rate_limit",
    "serviceunavailableexception": "overloaded",
    "modelnotreadyexception": "overloaded",
    "validationexception": "invalid_request",
    "accessdeniedexception": "permission",
    "resourcenotfoundexception": "not_found",
    "unrecognizedclientexception": "authentication",
    # Google's status names (Vertex)
    "resource_exhausted": "rate_limit",
    "unavailable": "overloaded",
    "permission_denied": "permission",
    "unauthenticated": "authentication",
    "invalid_argument": "invalid_request",
}
_STATUS_KIND = {
    400: "invalid_request",
    401: "authentication",
    403: "permission",
    404: "not_found",
    413: "context_too_long",
    429: "rate_limit",
    503: "overloaded",
    529: "overloaded",
}
_CONTEXT_HINT = re.compile(
    r"prompt is too long|input is too long|context (window|length)|too many tokens|exceeds? the context", re.I
)
# What a cloud's client raises at request time when it finds no credentials.
_CREDENTIAL_FAILURE = re.compile(r"credentials|could not resolve (api token|project_id)|no region", re.I)
_CREDENTIAL_MODULES = ("botocore", "google.auth")


def to_model_error(
    err: BaseException, *, model: str, client: Any, platform: Platform = "anthropic"
) -> ModelError | None:
    """The ModelError for an SDK or transport failure; None for anything else (a bug)."""
    import anthropic
    import httpx2

    info = PLATFORMS[platform]
    title = info.title
    retries = getattr(client, "max_retries", 0)
    after = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
    if _is_credential_failure(err):
        return ModelError(
            f"No credentials for {title}: {str(err).rstrip('.')}. To use it, {info.credentials}.", kind="missing_key"
        )
    if isinstance(err, (anthropic.APIConnectionError, httpx2.TransportError)):
        where = str(getattr(client, "base_url", title))
        if isinstance(err, (anthropic.APITimeoutError, httpx2.TimeoutException)):
            detail = "timed out"
        else:  # the SDK's own text is a bare "Connection error."; the cause says which
            detail = str(err.__cause__ or err).rstrip(".") or type(err).__name__
        if not isinstance(err, anthropic.APIConnectionError):  # broken mid-stream; the SDK does not retry that
            return ModelError(
                f"The connection to {title} at {where!r} broke in the middle of the "
                f"response ({detail}). Run the prompt again.",
                kind="connection",
            )
        return ModelError(
            f"Could not reach {title} at {where!r}{after}: {detail}. "
            "Check the network connection (and the base URL if you set one), then run again.",
            kind="connection",
        )
    if not isinstance(err, anthropic.APIStatusError):
        if isinstance(err, anthropic.AnthropicError):
            return ModelError(f"The client for {title} failed: {err}. Run the prompt again.", kind="other")
        return None
    status = err.status_code
    body = err.body if isinstance(err.body, dict) else {}
    detail = err.api_message or str(body.get("message") or "") or str(err)
    kind = _TYPE_KIND.get(_error_type(err).lower()) or _STATUS_KIND.get(status) or "other"
    if kind in ("invalid_request", "context_too_long") and (_CONTEXT_HINT.search(detail) or status == 413):
        kind = "context_too_long"
    # A mid-stream `error` event arrives on a 200 response and is not retried; say so.
    code = f"HTTP {status}" if status >= 400 else "error event during the response"
    after = after if status >= 400 else ""
    messages = {
        "authentication": f"{_cap(title)} rejected the credentials ({code}: {detail}). "
        + (
            "Check that ANTHROPIC_API_KEY holds a valid key (https://console.anthropic.com)."
            if platform == "anthropic"
            else f"Check them: {info.credentials}."
        ),
        "permission": f"These credentials may not use {model!r} or this feature on {title} ({code}: {detail}). "
        "Use credentials with access to it (on a cloud, enable the model for your account), or choose another "
        "model with IPY_AGENT_MODEL.",
        "not_found": f"Model {model!r} was not found on {title} ({code}: {detail}). Choose a model you can use "
        "there: pass model=... or set IPY_AGENT_MODEL.",
        "overloaded": f"{_cap(title)} is overloaded ({code}{after}: {detail}). Wait a minute and run again.",
        "rate_limit": f"Rate limit reached on {title} ({code}{after}: {detail}). Wait a minute and run again, "
        "or lower the request rate.",
        "context_too_long": f"The conversation is too long for {model!r} on {title} ({code}: {detail}). "
        "Start a new conversation, or remove large tool results from the history, and run again.",
        "invalid_request": f"{_cap(title)} rejected the request ({code}: {detail}). "
        "Check the model options (max_tokens, thinking) and the conversation.",
        "budget_exceeded": f"The key gateway refused the request: {detail}",
        "other": f"{_cap(title)} failed ({code}{after}: {detail}). Run the prompt again"
        + ("; if it keeps failing, see https://status.anthropic.com." if platform == "anthropic" else "."),
    }
    return ModelError(messages[kind], kind=kind)


def _error_type(err: Any) -> str:
    """The error's type as the platform names it: Anthropic's error.type, Bedrock's
    x-amzn-errortype header (or an exception frame's code), Google's error.status."""
    if err.type:
        return str(err.type)
    header = err.response.headers.get("x-amzn-errortype", "") if getattr(err, "response", None) is not None else ""
    if header:
        return str(header).split(":")[0]
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error")
    if isinstance(inner, dict):
        return str(inner.get("status") or inner.get("type") or "")
    return str(body.get("__type") or "").rsplit("#", 1)[-1]


def _is_credential_failure(err: BaseException) -> bool:
    module = type(err).__module__
    if module.startswith(_CREDENTIAL_MODULES):
        return True
    return isinstance(err, (RuntimeError, ValueError)) and bool(_CREDENTIAL_FAILURE.search(str(err)))


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
