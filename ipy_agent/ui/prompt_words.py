"""The words of an approval prompt, one vocabulary per kind of question.

Most calls are approved: **Allow** (once), **Always allow `<rule>`**, **Deny**. A change of the
open notebook's cell, shown for review (NotebookEdit with a `StagedReview`), is reviewed: the cell
says **Accept** / **Reject**, so the `%agent` prompt, the extension's fallback buttons
(labextension/src/fallback.ts) and the terminal say the same, with **Accept all** / **Reject all**
and one "Always accept edits to …" choice that grants the same rule "Always allow" would, named
for a person by what it covers ("this notebook": an edit of a notebook suggests a rule for that
notebook alone). Every reason box says where the reason goes in the same words,
`REASON_GOES` (the extension's boxes use the same words; a test holds the two together).
"""

from __future__ import annotations

from dataclasses import dataclass

from ipy_agent.permissions.decide import PermissionRequest

__all__ = [
    "REASON_GOES",
    "Words",
    "always_accept_label",
    "approval_words",
    "prompt_notes",
    "review_words",
    "words_for",
]

# Where a typed reason goes, the same in every reason box (Python and TypeScript).
REASON_GOES = "optional, sent to the agent"


@dataclass(frozen=True, kw_only=True)
class Words:
    """What one prompt's buttons and boxes say, and how its answers read afterwards."""

    allow: str
    allow_tip: str
    always: str
    always_tip: str
    deny: str
    deny_tip: str
    reason: str  # the reason box's placeholder
    allowed: str  # the answered prompt's line
    always_allowed: str
    denied: str
    review: bool  # a cell edit under review: Accept all / Reject all are offered too


def approval_words(rule: str) -> Words:
    """Allow / Always allow `rule` / Deny: every call that is not a review."""
    short = rule if len(rule) <= 60 else rule[:59] + "…"
    return Words(
        allow="Allow",
        allow_tip="Allow this call once",
        always=f"Always allow {short}",
        always_tip=f"Allow, and add the rule {rule} for this kernel session",
        deny="Deny",
        deny_tip="Refuse; the reason goes to the agent",
        reason=f"Reason for denying ({REASON_GOES})",
        allowed="Allowed once",
        always_allowed=f"Allowed; rule added: {rule}",
        denied="Denied",
        review=False,
    )


def always_accept_label(rule: str) -> str:
    """ "Always accept edits to …", named by what `rule` covers (the rule itself is unchanged).

    `Edit(./*.ipynb)` (what an edit of a notebook in the working directory suggests) covers every
    notebook there, so it says so rather than "this notebook"."""
    inner = rule[len("Edit(") : -1] if rule.startswith("Edit(") and rule.endswith(")") else None
    if inner is None:
        return f"Always accept {rule}"
    if inner.startswith("./*."):
        kind = "notebooks" if inner == "./*.ipynb" else f"{inner[3:]} files"
        return f"Always accept edits to {kind} in this folder"
    if inner.startswith("./") and "*" not in inner:
        return f"Always accept edits to {inner[2:]}"
    if inner.endswith("/**") and "*" not in inner[:-3]:
        folder = inner[:-3]
        return f"Always accept edits to files in {folder[1:] if folder.startswith('//') else folder}/"
    return f"Always accept {rule}"


def review_words(rule: str) -> Words:
    """Accept / Reject, Accept all / Reject all, and "Always accept edits to …": a cell edit under review.

    The rule an edit of a notebook suggests names that notebook alone (`Edit(./nb.ipynb)`), so
    the lasting choice reads "Always accept edits to this notebook"."""
    always = "Always accept edits to this notebook" if _one_notebook(rule) else always_accept_label(rule)
    return Words(
        allow="Accept",
        allow_tip="Accept this change",
        always=always,
        always_tip=f"Accept, and accept such edits from now on without asking: adds the rule {rule} "
        "for this kernel session",
        deny="Reject",
        deny_tip="Leave the cell as it is; the reason goes to the agent",
        reason=f"Reason for rejecting ({REASON_GOES})",
        allowed="Accepted",
        always_allowed=f"Accepted; from now on: {always[len('Always ') :]} (rule {rule})",
        denied="Rejected",
        review=True,
    )


def _one_notebook(rule: str) -> bool:
    """Whether `rule` is `Edit(<one .ipynb path>)`, with no pattern in it."""
    inner = rule[len("Edit(") : -1] if rule.startswith("Edit(") and rule.endswith(")") else ""
    return inner.endswith(".ipynb") and not any(c in inner for c in "*?[")


def prompt_notes(request: PermissionRequest) -> list[str]:
    """The prompt's warnings, as true when it is drawn: the tool's notes, and for a change
    under review what an answer does (shown in the cell or not, review.effect)."""
    p = request.preview
    if p is None:
        return []
    notes = list(p.notes)
    if p.review is not None and (effect := p.review.effect):
        notes.append(effect)
    return notes


def words_for(request: PermissionRequest) -> Words:
    """The prompt's vocabulary: Accept / Reject for a cell edit under review, else Allow / Deny."""
    rule = request.suggested_rule or request.tool_name
    review = request.preview is not None and request.preview.review is not None
    return review_words(rule) if review else approval_words(rule)
