"""One line of usage for a run: the model, tokens, the cost estimate, the share of the context window.

Shared by the widget footer, the static record and the terminal footer, so all three say the
same. A model that runs offline (ScriptedModel: `offline = True`) costs nothing, so no dollar
figure is shown for it; a model that knows its prices (`cost(usage)`: Claude on each platform,
an OpenAI-compatible model with prices set) says how sure the figure is; any other is priced as
a Sonnet and says so. The line starts with `provider:model`, so a run's record names both.
"""

from __future__ import annotations

from typing import Any

from ipy_agent.models.base import Priced, model_label

__all__ = ["model_name", "turns_text", "usage_parts"]


def model_name(model: Any) -> str:
    try:
        return str(getattr(model, "name", "") or "")
    except Exception:  # a model whose name needs a network call must not break a footer
        return ""


def turns_text(turns: int) -> str:
    return f"{turns} turn" if turns == 1 else f"{turns} turns"


def usage_parts(
    model: Any, usage: Any, context_tokens: int, *, answered: bool = True, window: int | None = None
) -> list[str]:
    """The parts of the line, plain text. `answered`: the model has replied at least once (before
    that its name may not be resolved, and cost and context share need it). `window`: the
    context window the agent manages, when not the model's own."""
    label = model_label(model) if model is not None else ""
    parts = [label] if label else []
    parts += [
        f"tokens in {usage.input_tokens + usage.cache_creation_input_tokens:,}",
        f"out {usage.output_tokens:,}",
        f"cached {usage.cache_read_input_tokens:,}",
    ]
    # "in" is input the model processed fresh (cache writes included); "cached" was read from the
    # prompt cache at a tenth of the price.
    if not answered:
        return parts
    name = model_name(model)
    from ipy_agent.models.pricing import context_window, estimate_cost, price_for

    if getattr(model, "offline", False):
        parts.append("no cost (offline model)")
    elif isinstance(model, Priced):
        cost = model.cost(usage)
        parts.append(f"no cost ({cost.note})" if cost.usd is None else f"cost ≈ ${cost.usd:.4f} ({cost.note})")
    else:
        known = "" if price_for(name).known else ", unknown model priced as Sonnet"
        parts.append(f"cost ≈ ${estimate_cost(name, usage):.4f} (estimate{known})")
    window = window or context_window(name)
    share = 100 * context_tokens / window if window else 0
    # "0%" read as "nothing sent" while the model had seen a few thousand tokens.
    shown = "<1" if 0 < share < 0.5 else f"{share:.0f}"
    parts.append(f"context {shown}% of {window // 1000}k")
    return parts
