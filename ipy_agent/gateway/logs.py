"""One JSON line per request on the `ipy_agent.gateway` logger, for an administrator's log search.

A line says who asked (the person's name, not their token), for which model, what came back
(status, tokens, US dollars charged and how: `usage` reported by the API, `held_maximum` for a
response that ended without it, `nothing` for an error), how long it took (`latency_ms`, and the
API's time to first byte, `upstream_ttfb_ms`) and, for a refusal, why (`refusal`, the reasons of
`/metrics`). It never holds the prompt, the response's text, the person's token or the API key:
the record is built from those fields only, not from the request or the response.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Literal, TextIO

__all__ = ["LOGGER", "RequestRecord", "log_request", "log_to"]

LOGGER = logging.getLogger("ipy_agent.gateway")
_MODEL_CHARS = 100  # a model name is the client's to choose: at most this much of it is logged

Charged = Literal["usage", "held_maximum", "nothing"]


@dataclass(kw_only=True)
class RequestRecord:
    """What one request did, filled in by its handler as it goes."""

    path: str
    user: str | None = None
    model: str | None = None
    status: int = 0
    refusal: str | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    usd: float = 0.0
    charged: Charged | None = None  # None: nothing was held (not a request for a message)
    latency_ms: float = 0.0
    upstream_ttfb_ms: float | None = None

    def line(self) -> str:
        fields = asdict(self)
        if self.model is not None:
            fields["model"] = self.model[:_MODEL_CHARS]
        fields["usd"] = round(self.usd, 6)
        fields["latency_ms"] = round(self.latency_ms, 1)
        if self.upstream_ttfb_ms is not None:
            fields["upstream_ttfb_ms"] = round(self.upstream_ttfb_ms, 1)
        return json.dumps({"event": "request", **fields}, sort_keys=False)


def log_request(record: RequestRecord) -> None:
    level = logging.WARNING if record.status >= 500 else logging.INFO
    LOGGER.log(level, record.line())


def log_to(stream: TextIO) -> None:
    """Write the gateway's lines to `stream`, one JSON object a line (the command line's stdout)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
