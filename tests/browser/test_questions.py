"""AskUserQuestion as a person meets it in JupyterLab and Notebook 7: a click on an option, an
"Other" answer typed key by key, Answer; the model receives both answers whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import JupyterServer
from tests.support.transcript import use

pytestmark = pytest.mark.browser

QUESTIONS = [
    {
        "question": "Which model should I fit first?",
        "header": "Model",
        "options": [
            {"label": "Linear", "description": "a baseline"},
            {"label": "Boosting", "description": "slower"},
            {"label": "Grid search (recommended)", "description": "tries each setting"},
        ],
    },
    {
        "question": "How should the plots be grouped?",
        "header": "Plots",
        "options": [{"label": "By region"}, {"label": "By product"}],
    },
]
OTHER = "by week, then by region"


def test_a_click_and_an_other_answer_typed_key_by_key_reach_the_model(
    server: JupyterServer, browser: Any, project: Path
):
    turns = [[use("AskUserQuestion", "q1", questions=QUESTIONS)], "Understood."]
    (project / "ask.json").write_text(json.dumps({"turns": turns}))
    nb = server.open(browser, f"{project.name}/q.ipynb")
    nb.run_and_wait(f"import os; os.chdir({str(project)!r})\n%load_ext ipy_agent")
    i = nb.add_cell("%agent --script ask.json plan the analysis")
    nb.run(i)
    long = nb.button(i, "Grid search (recommended)")
    # The whole label shows: its button is as wide as its words (it was cut to "Grid search (reco…").
    assert long.evaluate("b => b.scrollWidth <= b.clientWidth"), long.evaluate("b => [b.scrollWidth, b.clientWidth]")
    nb.button(i, "Boosting").click()
    other = nb.output_area(i).locator("input[placeholder^='Other']:not([disabled])").nth(1)
    other.click()
    other.press_sequentially(OTHER, delay=60)
    nb.button(i, "Answer").click()
    nb.wait_text(i, "Finished")
    nb.wait_done(i)
    shown = nb.text(i)
    assert f"Answered: Model: Boosting; Plots: {OTHER}" in shown
    k = nb.run_and_wait(
        "from ipy_agent.magics import current_session\n"
        "from tests.support.transcript import all_results, result_text\n"
        "print('RESULT>>' + result_text(all_results(current_session().agent.messages)['q1']) + '<<')"
    )
    told = nb.text(k)
    assert '"Which model should I fit first?" = "Boosting"' in told
    assert f'"How should the plots be grouped?" = "{OTHER}"' in told
    nb.close()
