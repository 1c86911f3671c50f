"""Cost estimates and context window sizes, by model family.

The API reports tokens, not money, and it does not say how large a model's context window is
in the response. The UI shows both anyway (what a run cost, how full the context is), so this
module keeps a small price table by family and version. Everything here is an ESTIMATE: prices
change, and a model this table does not know is priced as a Sonnet. `price_for(model).known`
says whether the table recognised the name, so the UI can say "estimate (unknown model)".

The clouds name the same models their own way ("us.anthropic.claude-sonnet-4-5-20250929-v1:0"
on Bedrock, "claude-sonnet-4-5@20250929" on Vertex): `canonical_name` reads both. They charge
Anthropic's prices; from the 4.5 models on, a regional endpoint (a Bedrock inference profile for
one geography, a Vertex region other than "global") costs 10% more (`claude_cost`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import Cost, Usage

__all__ = [
    "CONTEXT_1M_BETA",
    "DEFAULT_CONTEXT_WINDOW",
    "LONG_CONTEXT_WINDOW",
    "REGIONAL_FACTOR",
    "Prices",
    "canonical_name",
    "claude_cost",
    "context_window",
    "estimate_cost",
    "price_for",
    "usd_for",
]

DEFAULT_CONTEXT_WINDOW = 200_000
LONG_CONTEXT_WINDOW = 1_000_000
# The `anthropic-beta` value that opens the 1M-token window on models that offer it as an option
# (the installed SDK lists it among its beta names).
CONTEXT_1M_BETA = "context-1m-2025-08-07"

# Prompt caching multiplies the input price: writing a 5-minute cache entry costs 1.25x,
# reading from the cache 0.1x.
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1
# A regional endpoint's surcharge on the clouds, for models from 4.5 on.
REGIONAL_FACTOR = 1.1
REGIONAL_SINCE = (4, 5)


@dataclass(frozen=True, kw_only=True)
class Prices:
    """USD per million tokens."""

    input: float
    output: float
    known: bool = True

    @property
    def cache_write(self) -> float:
        return self.input * CACHE_WRITE_FACTOR

    @property
    def cache_read(self) -> float:
        return self.input * CACHE_READ_FACTOR


_SONNET = Prices(input=3.0, output=15.0)
_UNKNOWN = Prices(input=3.0, output=15.0, known=False)

# (family, first version with this price, prices); the newest matching row wins. Versions are
# (major, minor) from names like "claude-opus-4-5" or "claude-3-5-haiku-20241022".
_TABLE: list[tuple[str, tuple[int, int], Prices]] = [
    ("opus", (0, 0), Prices(input=15.0, output=75.0)),
    ("opus", (4, 5), Prices(input=5.0, output=25.0)),
    ("sonnet", (0, 0), _SONNET),
    ("haiku", (0, 0), Prices(input=0.25, output=1.25)),
    ("haiku", (3, 5), Prices(input=0.8, output=4.0)),
    ("haiku", (4, 5), Prices(input=1.0, output=5.0)),
]

_FAMILY = re.compile(r"\b(opus|sonnet|haiku)\b")
# A version part is one or two digits; eight digits is a date snapshot, not a version.
_VERSION = re.compile(r"(?<![0-9])(\d{1,2})(?:[-.](\d{1,2}))?(?![0-9])")


_CLOUD_PREFIX = re.compile(r"^(?:arn:[^/]*/)?(?:(?:global|us|eu|apac|jp|au|ca|us-gov)\.)?(?:anthropic\.)?")
_CLOUD_SUFFIX = re.compile(r"(?:@\d{8}|-v\d+(?::\d+)?)+$")


def canonical_name(model: str) -> str:
    """The model's name as Anthropic's API spells it, from a cloud's spelling: Bedrock's region
    and vendor prefixes and version suffix ("us.anthropic.claude-opus-4-5-20251101-v1:0"),
    an inference profile's ARN, or Vertex's "@date" ("claude-sonnet-4-5@20250929")."""
    name = _CLOUD_PREFIX.sub("", model.strip())
    return _CLOUD_SUFFIX.sub("", name)


def _family_and_version(model: str) -> tuple[str, tuple[int, int]] | None:
    name = canonical_name(model).lower().replace("_", "-")
    found = _FAMILY.search(name)
    if found is None:
        return None
    # Newer names put the version after the family ("claude-sonnet-4-5"), older ones before it
    # ("claude-3-5-sonnet"); look after the family first.
    after = _VERSION.search(name, found.end())
    before = list(_VERSION.finditer(name, 0, found.start()))
    match = after or (before[-1] if before else None)
    if match is None:
        return found.group(1), (0, 0)
    return found.group(1), (int(match.group(1)), int(match.group(2) or 0))


def price_for(model: str) -> Prices:
    """Prices for `model`; an unknown name gets Sonnet prices with `known=False`."""
    parsed = _family_and_version(model)
    if parsed is None:
        return _UNKNOWN
    family, version = parsed
    best: Prices | None = None
    for row_family, since, prices in _TABLE:
        if row_family == family and version >= since:
            best = prices
    return best or _UNKNOWN


def estimate_cost(model: str, usage: Usage) -> float:
    """Estimated USD for `usage` on `model` (fresh input, output, cache writes and reads)."""
    return usd_for(price_for(model), usage)


def usd_for(p: Prices, usage: Usage) -> float:
    """USD for `usage` at prices `p` (cache writes and reads priced from the input price)."""
    total = (
        usage.input_tokens * p.input
        + usage.output_tokens * p.output
        + usage.cache_creation_input_tokens * p.cache_write
        + usage.cache_read_input_tokens * p.cache_read
    )
    return total / 1_000_000


def claude_cost(model: str, usage: Usage, *, regional: bool = False) -> Cost:
    """The estimated cost of `usage` on a Claude model; `regional`: served from a cloud's
    regional endpoint (10% more for models from 4.5 on)."""
    prices = price_for(model)
    usd = usd_for(prices, usage)
    parsed = _family_and_version(model)
    surcharge = regional and parsed is not None and parsed[1] >= REGIONAL_SINCE
    if surcharge:
        usd *= REGIONAL_FACTOR
    note = "estimate" + (", regional endpoint +10%" if surcharge else "")
    if not prices.known:
        note += ", unknown model priced as Sonnet"
    return Cost(usd=usd, note=note)


# Context windows, by family and first version (newest matching row wins): "native" is the window
# every request gets; "beta" is the window with CONTEXT_1M_BETA sent. Opus and Sonnet have a
# 1M window from 4.6 on; Sonnet 4 and 4.5 offer it only with the beta header; Haiku from 5.5.
_WINDOWS: list[tuple[str, tuple[int, int], int, int]] = [
    ("opus", (0, 0), DEFAULT_CONTEXT_WINDOW, DEFAULT_CONTEXT_WINDOW),
    ("opus", (4, 6), LONG_CONTEXT_WINDOW, LONG_CONTEXT_WINDOW),
    ("sonnet", (0, 0), DEFAULT_CONTEXT_WINDOW, DEFAULT_CONTEXT_WINDOW),
    ("sonnet", (4, 0), DEFAULT_CONTEXT_WINDOW, LONG_CONTEXT_WINDOW),
    ("sonnet", (4, 6), LONG_CONTEXT_WINDOW, LONG_CONTEXT_WINDOW),
    ("haiku", (0, 0), DEFAULT_CONTEXT_WINDOW, DEFAULT_CONTEXT_WINDOW),
    ("haiku", (5, 5), LONG_CONTEXT_WINDOW, LONG_CONTEXT_WINDOW),
]
_LONG_FAMILIES = re.compile(r"\b(fable|mythos)\b")


def context_window(model: str, *, betas: tuple[str, ...] | list[str] = ()) -> int:
    """Tokens of prompt `model` accepts, given the beta headers sent with its requests.

    A name ending in "[1m]" (Claude Code's spelling) asks for the long window explicitly. A
    model this table does not know gets the 200k every Claude model has at least; if that is
    too small the API's own "prompt is too long" still reaches the agent, which compacts then.
    """
    name = canonical_name(model).lower()
    if name.endswith("[1m]") or _LONG_FAMILIES.search(name.replace("_", "-")):
        return LONG_CONTEXT_WINDOW
    parsed = _family_and_version(name)
    if parsed is None:
        return DEFAULT_CONTEXT_WINDOW
    family, version = parsed
    window = DEFAULT_CONTEXT_WINDOW
    for row_family, since, native, beta in _WINDOWS:
        if row_family == family and version >= since:
            window = beta if CONTEXT_1M_BETA in betas else native
    return window
