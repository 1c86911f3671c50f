"""AskUserQuestion in a real kernel: the question is a widget in the `%agent` cell, answered by
clicks and by an "Other" answer typed key by key, the way a front end sends them; and a
`--background` run is told at once that there is no person to ask."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kernel import Kernel
from tests.support.transcript import use

pytestmark = pytest.mark.kernel

QUESTIONS = [
    {
        "question": "Which model should I fit first?",
        "header": "Model",
        "options": [{"label": "Linear", "description": "a baseline"}, {"label": "Boosting", "description": "slower"}],
    },
    {
        "question": "Which plots do you want?",
        "header": "Plots",
        "options": [{"label": "Residuals"}, {"label": "Importance"}],
        "multiSelect": True,
    },
]
AGENT = "from ipy_agent.magics import current_session\nm = current_session()\n"


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[Kernel]:
    turns = [[use("AskUserQuestion", "q1", questions=QUESTIONS)], "Understood."]
    (tmp_path / "ask.json").write_text(json.dumps({"turns": turns}))
    k = Kernel(tmp_path)
    try:
        k.check("%load_ext ipy_agent")
        yield k
    finally:
        k.shutdown()


def _told(k: Kernel) -> str:
    return k.check(
        AGENT + "from tests.support.transcript import all_results, result_text\n"
        "print(result_text(all_results(m.agent.messages)['q1']))"
    )


def test_a_click_and_an_other_answer_typed_key_by_key_reach_the_model(loaded: Kernel):
    cell = loaded.execute("%agent --script ask.json plan the analysis")
    answer = loaded.wait_for("the Answer button", lambda: loaded.find_button("Answer"))
    on_screen = loaded.displayed()
    toggles = [c for c in loaded.widgets("ToggleButtonsModel") if c in on_screen]
    assert len(toggles) == 1 and loaded.models[toggles[0]]["_options_labels"] == ["Linear", "Boosting", "Other"]
    loaded.set_state(toggles[0], {"index": 1})  # a click on "Boosting"
    loaded.wait_for("the choice to reach the kernel", lambda: loaded.models[toggles[0]].get("index") == 1)

    box = next(c for c, s in loaded.widgets("CheckboxModel").items() if s.get("description") == "Residuals")
    loaded.set_state(box, {"value": True})
    loaded.wait_for("the tick to reach the kernel", lambda: loaded.models[box].get("value") is True)
    checks = loaded.wait_for("the box of the ticks", lambda: loaded.parent(box))
    other = next(c for c in loaded.siblings(checks) if loaded.models[c]["_model_name"] == "TextModel")
    loaded.type_text(other, "by week")
    loaded.click(answer)
    ex = loaded.wait(cell)

    assert ex.status == "ok", ex.text
    told = _told(loaded)
    assert '"Which model should I fit first?" = "Boosting"' in told
    assert '"Which plots do you want?" = "Residuals, by week"' in told
    assert loaded.shows("Answered: Model: Boosting; Plots: Residuals, by week")
    assert loaded.models[answer]["disabled"] is True


def test_a_background_run_is_told_there_is_no_person(loaded: Kernel):
    loaded.check("%agent --background --script ask.json plan the analysis")
    loaded.wait_for(
        "the background run to finish",
        lambda: "end_turn" in loaded.check(AGENT + "print(m.last_result and m.last_result.stop_reason)"),
    )
    assert "There is no person to ask" in _told(loaded)
    assert loaded.find_button("Answer") is None
