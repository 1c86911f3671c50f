"""What the gateway has done, for Prometheus (`GET /metrics`, its text format 0.0.4).

Counted in this process (each replica has its own; Prometheus adds them up):
- `ipy_agent_gateway_requests_total{status}`: requests answered, by HTTP status;
- `ipy_agent_gateway_refusals_total{reason}`: requests refused before reaching the API, by reason
  (`auth`, `model`, `budget_per_day`, `budget_per_user`, `bad_request`, `policy_unreadable`,
  `stopping`);
- `ipy_agent_gateway_spend_usd_total`: US dollars charged (reported usage, or held maximums);
- `ipy_agent_gateway_tokens_total{kind}`: tokens charged, by kind (input, output, cache reads and writes);
- `ipy_agent_gateway_holds_open`: requests holding their maximum while they run;
- `ipy_agent_gateway_upstream_ttfb_seconds`: a histogram of the API's time to its response's
  first byte (its status line and headers), per request forwarded.

Nothing here names a person, a prompt, a token or a key: the labels are statuses, reasons and kinds.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from .logs import RequestRecord

__all__ = ["CONTENT_TYPE", "Histogram", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_PREFIX = "ipy_agent_gateway"
# Seconds: a local fake answers in milliseconds, the real API in a fraction of a second to seconds.
_TTFB_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Histogram:
    """Observations counted in cumulative buckets (upper bounds in seconds), with their sum."""

    def __init__(self, bounds: Sequence[float] = _TTFB_BUCKETS) -> None:
        self.bounds = tuple(sorted(bounds))
        self.counts = [0] * len(self.bounds)  # not cumulative here; rendered cumulative
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.bounds, value)
        if index < len(self.bounds):
            self.counts[index] += 1
        self.count += 1
        self.sum += value

    def lines(self, name: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip(self.bounds, self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{le="{_number(bound)}"}} {running}')
        out += [
            f'{name}_bucket{{le="+Inf"}} {self.count}',
            f"{name}_sum {_number(self.sum)}",
            f"{name}_count {self.count}",
        ]
        return out


class Metrics:
    """The counters behind `/metrics`; updated on the gateway's event loop."""

    def __init__(self) -> None:
        self.requests: Counter[int] = Counter()
        self.refusals: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()
        self.spend_usd = 0.0
        self.holds_open = 0
        self.upstream_ttfb = Histogram()

    def count(self, record: RequestRecord) -> None:
        """Add one request's outcome."""
        self.requests[record.status] += 1
        if record.refusal is not None:
            self.refusals[record.refusal] += 1
        self.spend_usd += record.usd
        for kind, n in record.tokens.items():
            self.tokens[kind.removesuffix("_tokens")] += n
        if record.upstream_ttfb_ms is not None:
            self.upstream_ttfb.observe(record.upstream_ttfb_ms / 1000)

    def render(self) -> str:
        lines: list[str] = []

        def family(name: str, kind: str, help_text: str, samples: list[str]) -> None:
            lines.extend([f"# HELP {_PREFIX}_{name} {help_text}", f"# TYPE {_PREFIX}_{name} {kind}", *samples])

        family(
            "requests_total",
            "counter",
            "Requests answered, by HTTP status.",
            [f'{_PREFIX}_requests_total{{status="{s}"}} {n}' for s, n in sorted(self.requests.items())],
        )
        family(
            "refusals_total",
            "counter",
            "Requests refused before they reached the API, by reason.",
            [f'{_PREFIX}_refusals_total{{reason="{r}"}} {n}' for r, n in sorted(self.refusals.items())],
        )
        family(
            "spend_usd_total",
            "counter",
            "US dollars charged: reported usage, or the held maximum of a response cut short.",
            [f"{_PREFIX}_spend_usd_total {_number(self.spend_usd)}"],
        )
        family(
            "tokens_total",
            "counter",
            "Tokens charged, by kind.",
            [f'{_PREFIX}_tokens_total{{kind="{k}"}} {n}' for k, n in sorted(self.tokens.items())],
        )
        family(
            "holds_open",
            "gauge",
            "Requests in flight holding the most they can cost.",
            [f"{_PREFIX}_holds_open {self.holds_open}"],
        )
        family(
            "upstream_ttfb_seconds",
            "histogram",
            "The API's time to the first byte of its response.",
            self.upstream_ttfb.lines(f"{_PREFIX}_upstream_ttfb_seconds"),
        )
        return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return repr(float(value))
