"""The outcomes a proposal's banner showed in the page, kept as they appear.

A banner shows its outcome ("Accepted", "Rejected: <reason>") for a moment and then leaves its
cell, so a test that looks for it after the run ended would race its leaving. `watch_outcomes`
installs a MutationObserver that keeps every outcome text the moment a banner gets one;
`shown_outcome` waits until one contains the needle. No timing is assumed.
"""

from __future__ import annotations

from typing import Any

from .browser import TIMEOUT
from .waits import timed_out, waiting_for

__all__ = ["shown_outcome", "watch_outcomes"]

_WATCH = """() => {
  if (window.__ipyAgentOutcomes) return true;
  window.__ipyAgentOutcomes = [];
  new MutationObserver(records => {
    for (const r of records) {
      if (r.attributeName === 'data-outcome' && r.target.dataset.outcome) {
        const line = r.target.querySelector('.ipy-agent-proposal-outcome');
        window.__ipyAgentOutcomes.push(line ? line.textContent : r.target.dataset.outcome);
      }
    }
  }).observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-outcome']});
  return true;
}"""


def watch_outcomes(page: Any) -> None:
    """Keep, in the page, every outcome a banner shows from now on (a Playwright page)."""
    page.evaluate(_WATCH)


def shown_outcome(page: Any, needle: str) -> str:
    """Until a banner has shown an outcome containing `needle`; returns that outcome's text."""
    with waiting_for(f"Chromium to show {needle!r} as a proposal's outcome"):
        try:
            found = page.wait_for_function(
                "needle => (window.__ipyAgentOutcomes || []).find(t => t.includes(needle))",
                arg=needle,
                timeout=TIMEOUT * 1000,
            )
        except Exception:
            seen = page.evaluate("() => window.__ipyAgentOutcomes || null")
            raise timed_out(
                f"Chromium did not show {needle!r} as a proposal's outcome", TIMEOUT, f"shown: {seen}"
            ) from None
    return str(found.json_value())
