"""Where Claude is served: Anthropic's own API, Amazon Bedrock, Google Vertex AI, Microsoft Foundry.

The `anthropic` SDK has a client for each (`AsyncAnthropic`, `AsyncAnthropicBedrock`,
`AsyncAnthropicVertex`, `AsyncAnthropicFoundry`); all four take the same Messages API request
and stream the same events, so `AnthropicModel` (anthropic.py) works with any of them. What
differs is here: how a client is made from keyword arguments and the environment, which
credentials each needs and what to tell a person who has none, whether the platform counts
tokens, how the platform spells the default model, and whether an endpoint is regional (which
costs more on the clouds, models/pricing.py).

Each client reads its own environment variables (the SDK's names):
- anthropic: ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), ANTHROPIC_BASE_URL;
- bedrock: AWS credentials as boto3 finds them (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY,
  AWS_PROFILE, ...) or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK; AWS_REGION; and
  ANTHROPIC_BEDROCK_BASE_URL;
- vertex: Google application default credentials (GOOGLE_APPLICATION_CREDENTIALS or `gcloud
  auth application-default login`), or `access_token=`; CLOUD_ML_REGION,
  ANTHROPIC_VERTEX_PROJECT_ID, ANTHROPIC_VERTEX_BASE_URL;
- foundry: ANTHROPIC_FOUNDRY_API_KEY, ANTHROPIC_FOUNDRY_RESOURCE or ANTHROPIC_FOUNDRY_BASE_URL.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .base import ModelError

__all__ = [
    "PLATFORMS",
    "Platform",
    "PlatformInfo",
    "default_name",
    "is_regional",
    "make_client",
    "platform_of",
    "where",
]

Platform = Literal["anthropic", "bedrock", "vertex", "foundry"]
# Bedrock inference profiles for one geography (a "global." profile routes anywhere).
_GEO_PREFIXES = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.")


@dataclass(frozen=True, kw_only=True)
class PlatformInfo:
    name: Platform
    title: str  # how the person knows it
    client_class: str  # the SDK's async client
    extra: str  # the pip extra that brings what the client imports ("" for none)
    needs: str  # a module the client imports at request time, checked before the first request
    credentials: str  # what to set when there are none
    counts_tokens: bool
    model_prefix: str = ""  # how the platform spells a model name: prefix to the Anthropic name


PLATFORMS: dict[Platform, PlatformInfo] = {
    "anthropic": PlatformInfo(
        name="anthropic",
        title="the Anthropic API",
        client_class="AsyncAnthropic",
        extra="",
        needs="",
        credentials="set ANTHROPIC_API_KEY (keys: https://console.anthropic.com)",
        counts_tokens=True,
    ),
    "bedrock": PlatformInfo(
        name="bedrock",
        title="Amazon Bedrock",
        client_class="AsyncAnthropicBedrock",
        extra="bedrock",
        needs="botocore",
        credentials="give AWS credentials as boto3 finds them (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
        "AWS_PROFILE) or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK, and a region in AWS_REGION",
        counts_tokens=False,
        model_prefix="global.anthropic.",
    ),
    "vertex": PlatformInfo(
        name="vertex",
        title="Google Vertex AI",
        client_class="AsyncAnthropicVertex",
        extra="vertex",
        needs="google.auth",
        credentials="log in with `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS), "
        "and set CLOUD_ML_REGION (e.g. global) and ANTHROPIC_VERTEX_PROJECT_ID",
        counts_tokens=True,
    ),
    "foundry": PlatformInfo(
        name="foundry",
        title="Microsoft Foundry",
        client_class="AsyncAnthropicFoundry",
        extra="",
        needs="",
        credentials="set ANTHROPIC_FOUNDRY_API_KEY and ANTHROPIC_FOUNDRY_RESOURCE (or ANTHROPIC_FOUNDRY_BASE_URL)",
        counts_tokens=True,
    ),
}
assert set(PLATFORMS) == set(get_args(Platform))

_ANTHROPIC_CREDENTIALS = ("api_key", "auth_token", "credentials", "config", "profile")
_ANTHROPIC_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


GATEWAY_ENV = "IPY_AGENT_GATEWAY_URL"


def through_gateway(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """`kwargs` for Anthropic's API, sent through the key gateway when `IPY_AGENT_GATEWAY_URL` is
    set (a JupyterHub deployment sets it for every server) and no address or key was given: the
    gateway holds the key, and the person's token is `IPY_AGENT_GATEWAY_TOKEN`, else
    `JUPYTERHUB_API_TOKEN`. ANTHROPIC_API_KEY is then never read."""
    url = os.environ.get(GATEWAY_ENV, "").strip()
    if not url or "base_url" in kwargs or any(k in kwargs for k in _ANTHROPIC_CREDENTIALS):
        return dict(kwargs)
    token = os.environ.get("IPY_AGENT_GATEWAY_TOKEN", "").strip() or os.environ.get("JUPYTERHUB_API_TOKEN", "").strip()
    return {**kwargs, "base_url": url, "api_key": token or None, "_gateway": True}


def platform_of(client: object) -> Platform:
    """The platform an SDK client talks to, from its class (a subclass counts as its base)."""
    names = {k.__name__ for k in type(client).__mro__}
    for info in PLATFORMS.values():
        if info.name != "anthropic" and (info.client_class in names or info.client_class[5:] in names):
            return info.name
    return "anthropic"


def make_client(platform: Platform, kwargs: Mapping[str, Any], *, missing_key_message: str) -> Any:
    """A new async client for `platform` from `kwargs`; ModelError (kind "missing_key") with
    what to install or set when the client cannot be made."""
    info = PLATFORMS[platform]
    if kwargs.get("_gateway"):
        if not kwargs.get("api_key"):
            raise ModelError(
                f"{GATEWAY_ENV} sends requests through the key gateway at {kwargs['base_url']}, which needs your "
                "token: JUPYTERHUB_API_TOKEN (set in every JupyterHub server) or IPY_AGENT_GATEWAY_TOKEN.",
                kind="missing_key",
            )
        kwargs = {k: v for k, v in kwargs.items() if k != "_gateway"}
    elif platform == "anthropic" and not _has_anthropic_credentials(kwargs):
        raise ModelError(missing_key_message, kind="missing_key")
    if info.needs and importlib.util.find_spec(info.needs.split(".")[0]) is None and not _token_given(platform, kwargs):
        raise ModelError(
            f"Claude on {info.title} needs the {info.needs.split('.')[0]} package: "
            f"pip install 'ipy_agent[{info.extra}]' (or 'anthropic[{info.extra}]'), then restart the kernel.",
            kind="missing_key",
        )
    import anthropic  # deferred: importing the SDK is slow

    cls = getattr(anthropic, info.client_class)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, anthropic.AnthropicError) as e:
        raise ModelError(
            f"Could not set up the client for {info.title}: {e} To use it, {info.credentials}.", kind="missing_key"
        ) from None


def is_regional(platform: Platform, model: str, client_or_kwargs: object) -> bool:
    """Whether requests go to a regional endpoint (10% more on the clouds, from the 4.5 models)."""
    if platform == "bedrock":
        name = model.rsplit("/", 1)[-1]
        return not name.startswith("global.")
    if platform == "vertex":
        region = _get(client_or_kwargs, "region") or os.environ.get("CLOUD_ML_REGION", "")
        return str(region) not in ("", "global")
    return False


def default_name(platform: Platform, anthropic_name: str) -> str:
    """The default model as `platform` spells it."""
    return PLATFORMS[platform].model_prefix + anthropic_name


def where(platform: Platform, kwargs: Mapping[str, Any]) -> str:
    """A short description of the endpoint: the platform, and its region or address when set."""
    info = PLATFORMS[platform]
    detail = ""
    if platform == "bedrock":
        detail = str(
            kwargs.get("aws_region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
        )
    elif platform == "vertex":
        region = kwargs.get("region") or os.environ.get("CLOUD_ML_REGION") or ""
        project = kwargs.get("project_id") or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID") or ""
        detail = ", ".join(
            p for p in (f"region {region}" if region else "", f"project {project}" if project else "") if p
        )
    elif platform == "foundry":
        detail = str(kwargs.get("resource") or os.environ.get("ANTHROPIC_FOUNDRY_RESOURCE") or "")
    base_url = kwargs.get("base_url")
    if base_url:
        at = f"through the key gateway at {base_url}" if kwargs.get("_gateway") else f"at {base_url}"
        detail = ", ".join(p for p in (detail, at) if p)
    title = info.title[4:] if info.title.startswith("the ") else info.title
    return f"{title} ({detail})" if detail else title


def _get(obj: object, key: str) -> object:
    if isinstance(obj, Mapping):
        return obj.get(key)
    try:
        return getattr(obj, key, None)
    except Exception:  # the Vertex client's region raises when unset
        return None


def _token_given(platform: Platform, kwargs: Mapping[str, Any]) -> bool:
    # Vertex with a fixed access token needs no google-auth; Bedrock always needs botocore (its
    # event stream decoder), even with an API key.
    return platform == "vertex" and kwargs.get("access_token") is not None


def _has_anthropic_credentials(kwargs: Mapping[str, Any]) -> bool:
    if any(kwargs.get(k) is not None for k in _ANTHROPIC_CREDENTIALS):
        return True
    return any(os.environ.get(k) for k in _ANTHROPIC_ENV)
