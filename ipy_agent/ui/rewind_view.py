"""A rewind's report as the person sees it: a compact box (HTML) with a plain-text twin, both
kept in the notebook file, so a saved notebook shows what was put back and what was not."""

from __future__ import annotations

from html import escape

from ipy_agent.loop.rewind_report import RewindReport

__all__ = ["rewind_bundle", "rewind_html"]

_WARN = ("Kept", "Not restored", "Changed by approved", "Lost")


def rewind_html(report: RewindReport) -> str:
    parts = [
        '<div class="ipy-agent-rewind" style="border-left:3px solid #1976d2;padding:4px 10px;'
        'margin:4px 0;font-size:13px">',
        f"<div><b>↶ {escape(report.headline())}</b></div>",
    ]
    for heading, items in report.sections():
        color = "#b26a00" if heading.startswith(_WARN) else "inherit"
        rows = "".join(f"<li><code>{escape(item)}</code></li>" for item in items)
        parts.append(
            f'<details open><summary style="color:{color}">{escape(heading)} ({len(items)})</summary>'
            f'<ul style="margin:2px 0">{rows}</ul></details>'
        )
    parts.append("</div>")
    return "".join(parts)


def rewind_bundle(report: RewindReport) -> dict[str, str]:
    """The display bundle: HTML for the page, the same as text for everything else."""
    return {"text/plain": str(report), "text/html": rewind_html(report)}
