"""One vocabulary per kind of question: a cell edit under review is answered with Accept / Reject
wherever it is asked (the `%agent` prompt, the extension's fallback buttons, the terminal), every
other call with Allow / Deny; every reason box says where the reason goes in the same words; a
prompt's warnings say what is true when it is drawn. Also the small things a person met: a
refusal's reason cut mid-word, an option label cut with room to spare, a notice drawn as an error."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, Literal

import ipywidgets as W
import pytest

from ipy_agent import PermissionPreview, PermissionRequest
from ipy_agent.contract.questions import Question, QuestionOption
from ipy_agent.ui import announce
from ipy_agent.ui.approval_widget import ApprovalPrompt
from ipy_agent.ui.fallback_prompt import watch
from ipy_agent.ui.prompt_words import REASON_GOES, always_accept_label
from ipy_agent.ui.question_widget import QuestionPrompt
from ipy_agent.ui.record import clip_words, row_result_text
from ipy_agent.ui.text import terminal_approver
from tests.ui.test_widgets import texts

ROOT = Path(__file__).resolve().parents[2]
DIFF = "--- n.ipynb\n+++ n.ipynb\n@@ -1 +1 @@\n-x = 1\n+x = 41\n"


class Review:
    """A change staged for review, as the prompt sees it (contract/review.py's StagedReview)."""

    def __init__(self, effect: str = "nothing changes until you accept") -> None:
        self.effect = effect
        self.stood: list[tuple[str, str]] = []

    def stand(self, behavior: Literal["allow", "deny"], reason: str = "") -> None:
        self.stood.append((behavior, reason))


def cell_edit(review: Review | None, rule: str = "Edit(./*.ipynb)") -> PermissionRequest:
    return PermissionRequest(
        tool_name="NotebookEdit",
        input={},
        summary="replace cell 2 in n.ipynb",
        suggested_rule=rule,
        tool_use_id="e1",
        preview=PermissionPreview(title="Replace cell 2", diff=DIFF, added=1, removed=1, review=review),  # type: ignore[arg-type]
    )


def bash(command: str = "make") -> PermissionRequest:
    return PermissionRequest(
        tool_name="Bash",
        input={"command": command},
        summary=command,
        suggested_rule="Bash(make:*)",
        tool_use_id="b1",
        preview=PermissionPreview(command=command),
    )


def labels(prompt: ApprovalPrompt) -> list[str]:
    row = prompt.widget.children[1]
    return [str(w.description) for w in row.children if isinstance(w, W.Button)]


async def test_a_cell_edit_under_review_is_accepted_or_rejected_in_the_agent_prompt():
    loop = asyncio.get_running_loop()
    prompt = ApprovalPrompt(cell_edit(Review()), loop, loop.create_future())
    assert labels(prompt) == [
        "Accept",
        "Reject",
        "Accept all",
        "Reject all",
        "Always accept edits to notebooks in this folder",
    ]
    assert prompt.reason.placeholder == "Reason for rejecting (optional, sent to the agent)"
    shown = " ".join(texts(prompt.widget))
    assert "Allow" not in shown and "Deny" not in shown and "the model" not in shown
    assert "nothing changes until you accept" in shown
    prompt.reject("keep x")
    await asyncio.sleep(0)
    assert prompt.outcome_text == "Rejected: keep x"


async def test_always_accept_grants_the_rule_always_allow_granted_and_says_so():
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    prompt = ApprovalPrompt(cell_edit(Review()), loop, future)
    assert "adds the rule Edit(./*.ipynb)" in prompt.always_button.tooltip
    prompt.always()
    answer = await future
    assert (answer.behavior, answer.rule) == ("always", "Edit(./*.ipynb)")
    assert prompt.outcome_text == (
        "Accepted; from now on: accept edits to notebooks in this folder (rule Edit(./*.ipynb))"
    )


async def test_always_accept_of_one_notebook_says_this_notebook_and_grants_that_notebook_only():
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    prompt = ApprovalPrompt(cell_edit(Review(), rule="Edit(./analysis.ipynb)"), loop, future)
    assert prompt.always_button.description == "Always accept edits to this notebook"
    prompt.always()
    answer = await future
    assert (answer.behavior, answer.rule) == ("always", "Edit(./analysis.ipynb)")
    assert prompt.outcome_text == "Accepted; from now on: accept edits to this notebook (rule Edit(./analysis.ipynb))"


async def test_other_prompts_keep_allow_and_deny_and_the_reason_goes_to_the_agent():
    loop = asyncio.get_running_loop()
    prompt = ApprovalPrompt(bash(), loop, loop.create_future())
    assert labels(prompt) == ["Allow", "Always allow Bash(make:*)", "Deny"]
    assert prompt.reason.placeholder == "Reason for denying (optional, sent to the agent)"
    assert "Accept" not in " ".join(texts(prompt.widget))


@pytest.mark.parametrize(
    ("rule", "label"),
    [
        ("Edit(./*.ipynb)", "Always accept edits to notebooks in this folder"),
        ("Edit(./analysis.ipynb)", "Always accept edits to analysis.ipynb"),
        ("Edit(work/nbs/**)", "Always accept edits to files in work/nbs/"),
        ("Edit(//srv/shared/**)", "Always accept edits to files in /srv/shared/"),
        ("NotebookEdit", "Always accept NotebookEdit"),
    ],
)
def test_the_lasting_choice_is_named_by_what_its_rule_covers(rule: str, label: str):
    assert always_accept_label(rule) == label


def reason_boxes(text: str) -> list[str]:
    return re.findall(r"Reason for [a-z]+ \([^)]*\)|Reason for [a-z]+ \(\$\{REASON_GOES\}\)", text)


def test_every_reason_box_says_where_the_reason_goes_in_the_same_words():
    fallback = (ROOT / "labextension/src/fallback.ts").read_text()
    assert f"export const REASON_GOES = '{REASON_GOES}';" in fallback  # the two sides agree
    sources = [*(ROOT / "ipy_agent/ui").glob("*.py"), *(ROOT / "labextension/src").glob("*.ts")]
    boxes = [(p.name, box) for p in sources for box in reason_boxes(p.read_text())]
    assert {name for name, _ in boxes} >= {"prompt_words.py", "fallback.ts", "reviewView.ts"}
    for name, box in boxes:
        assert box.endswith((f"({REASON_GOES})", "({REASON_GOES})", "(${REASON_GOES})")), (name, box)
    for p in sources:
        assert "sent to the model" not in p.read_text() and "goes to the model" not in p.read_text(), p.name


def test_a_warning_is_true_when_the_prompt_is_drawn():
    # A change shown in the cell changes nothing until accepted; one the page could not show
    # changes the open notebook at once when accepted. The review says which (edit_live.py: LiveReview).
    from ipy_agent.tools.notebook.edit_live import LiveReview

    class Page:
        reviews = None

    review = LiveReview.of(
        Page(),
        kind="replace",
        cell={"id": "c1", "index": 1},
        source="x = 41",
        old_source="x = 1",
        cell_type="code",
        label="cell 2 · x = 1",
        tool_use_id="e1",
    )
    assert "at once" in review.effect and "nothing changes" not in review.effect
    review._staged = True  # what `open()` sets once the page drew the change
    assert "nothing changes until you accept" in review.effect and "at once" not in review.effect
    assert "cell 2 · x = 1" in review.effect


def test_the_terminal_asks_a_review_in_its_words(monkeypatch, capsys):
    asked: list[str] = []
    answers = iter(["ya"])
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or next(answers))
    review = Review()
    answer = terminal_approver()(cell_edit(review))
    assert answer.behavior == "allow" and review.stood == [("allow", "")]  # Accept all stands for the run
    assert asked == [
        "Accept? [y]es / [n]o, reject / [ya] accept all / [na] reject all / "
        "[a] always accept edits to notebooks in this folder: "
    ]
    assert "nothing changes until you accept" in capsys.readouterr().out


def test_the_terminal_rejects_all_with_a_reason_for_the_agent(monkeypatch):
    asked: list[str] = []
    answers = iter(["na", "not today"])
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or next(answers))
    review = Review()
    answer = terminal_approver()(cell_edit(review))
    assert (answer.behavior, answer.message) == ("deny", "not today")
    assert review.stood == [("deny", "not today")]
    assert asked[1].startswith(f"Reason for rejecting ({REASON_GOES})")


def test_the_terminal_keeps_allow_for_a_command(monkeypatch):
    asked: list[str] = []
    answers = iter(["n", "no"])
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or next(answers))
    assert terminal_approver()(bash()).message == "no"
    assert asked == [
        "Allow? [y]es / [a]lways allow Bash(make:*) / [n]o: ",
        f"Reason for denying ({REASON_GOES}), Enter to skip: ",
    ]


class Bridge:
    """The page: it does not show the widget prompt, and answers with the extension's buttons."""

    connected = True

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.asked: list[dict[str, Any]] = []

    async def request(self, op: str, **args: Any) -> dict[str, Any]:
        if op == "prompt_shown":
            return {"shown": False}
        self.asked.append(args)
        return self.reply

    def post(self, op: str, **args: Any) -> None:
        pass


async def test_the_fallback_buttons_of_a_review_say_accept_and_accept_all_stands_for_the_run():
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    review = Review()
    prompt = ApprovalPrompt(cell_edit(review), loop, future)
    bridge = Bridge({"behavior": "accept_all", "message": ""})
    said: list[str] = []
    await watch(prompt, "p1", bridge, cell_id="c9", say=said.append, wait=0)
    [asked] = bridge.asked
    assert asked["review"] is True and asked["always_label"] == "Always accept edits to notebooks in this folder"
    assert "nothing changes until you accept" in asked["detail"]
    assert "Accept / Reject buttons the ipy_agent extension drew" in said[0]
    assert (await future).behavior == "allow" and review.stood == [("allow", "")]
    assert prompt.outcome_text == "Accepted (Accept all)"


async def test_the_fallback_buttons_of_a_command_keep_allow():
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    prompt = ApprovalPrompt(bash(), loop, future)
    bridge = Bridge({"behavior": "deny", "message": "not now"})
    said: list[str] = []
    await watch(prompt, "p2", bridge, cell_id="c9", say=said.append, wait=0)
    assert bridge.asked[0]["review"] is False
    assert "Allow / Deny buttons" in said[0]
    assert (await future).message == "not now"


NEVER_RUN = (
    "Cell 12 · results = train_the_big_model(data, epochs=200) must not be run by the agent (tag agent:never-run): the person set this, often because "
    "the cell is slow or has effects outside the notebook. Do not run its code another way; ask the person to "
    "run it, or go on without it."
)


def test_a_refused_rows_reason_ends_at_a_sentence_or_a_word():
    class Refused:
        status = "denied"
        summary_result = ""

        class decision:
            source = "tool"
            reason = NEVER_RUN

    assert row_result_text(Refused()) == NEVER_RUN[: NEVER_RUN.index("notebook.") + len("notebook.")]
    words = "word " * 80
    cut = clip_words(words.strip(), 60)
    assert cut.endswith(" …") and cut[:-2].split(" ") == ["word"] * (len(cut[:-2].split(" ")))
    assert clip_words("short enough") == "short enough"


async def test_an_option_label_is_as_wide_as_its_words():
    loop = asyncio.get_running_loop()
    question = Question(
        question="Which search?",
        header="Search",
        options=(QuestionOption(label="Grid search (recommended)", description="slow"), QuestionOption(label="Random")),
    )
    request = PermissionRequest(
        tool_name="AskUserQuestion",
        input={},
        summary="",
        suggested_rule="AskUserQuestion",
        tool_use_id="q1",
        preview=PermissionPreview(questions=(question,)),
    )
    prompt = QuestionPrompt(request, loop, loop.create_future())
    choice = prompt.asked[0].choice
    assert choice is not None and choice.style.button_width == "auto"  # not the fixed ~150 px that cut it


def test_the_waiting_note_is_a_notice_on_stdout_not_an_error(monkeypatch, capsys):
    monkeypatch.setattr(announce, "waiting_note", lambda: "⏳ ipy_agent: a background run is waiting")
    announce._before_cell()
    out, err = capsys.readouterr()
    assert "is waiting" in out and err == ""


def test_what_the_person_saw_of_a_review_is_told_in_its_words(tmp_path: Path):
    # %agent_inspect's "The person saw": Accepted for a cell edit under review, Allowed for the rest.
    from ipy_agent.ui.record import seen_lines
    from tests.notebook.test_review import edit, page, run

    panel = page()
    agent, _ = run(tmp_path, panel, lambda r: "allow", edit("e1", "c2", "y = 20"))
    [record] = [r for r in agent.trace if r.tool_name == "NotebookEdit"]
    assert seen_lines(record, "✓")[1:] == ["Accepted"]
    panel = page()
    agent, _ = run(tmp_path, panel, lambda r: "always", edit("e2", "c2", "y = 20"))
    [record] = [r for r in agent.trace if r.tool_name == "NotebookEdit"]
    assert seen_lines(record, "✓")[1:] == [
        "Accepted; from now on: accept edits to this notebook (rule Edit(./n.ipynb))"
    ]
