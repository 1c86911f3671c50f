"""The course site (examples/course/build.py) as a learner's browser shows it: three pages and the
index, opened from disk in Chromium with every network request refused.

The pages are built here from the notebooks (so the build itself is under test), unless
IPY_AGENT_COURSE_SITE names a site `.ci/run` has just built. `IPY_AGENT_SCREENSHOTS=1` writes
the README's picture of a page (docs/images/course.png).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.course import build as course
from tests.support.browser import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(1200)]

# (page, what the reader must see in its outputs, in order)
PAGES = {
    "01_tour": [
        "notes.txt on disk now:",
        "Permission: allow (person: allowed once)",
        "Turn 1: 2 call(s) in 1 batch(es)",
    ],
    "04_lifecycle_hooks": ["permission allow (default: read-only)", "A PreToolUse hook blocked this Bash call"],
    "16_instructions_and_skills": ["=== a skill: Skill(sales-report)", "skipped with instructions=False: True"],
}
WIDGET_ERRORS = ["Error displaying widget", "model not found", "ipy_agent run in progress", "Loading widget"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: Any) -> Path:
    given = os.environ.get("IPY_AGENT_COURSE_SITE")
    if given:
        root = Path(given)
        missing = [name for name in ["index", *PAGES] if not (root / f"{name}.html").exists()]
        assert not missing, (
            f"IPY_AGENT_COURSE_SITE={given} lacks {missing}; build it with python -m examples.course.build"
        )
        return root
    out = tmp_path_factory.mktemp("course") / "site"
    course.build(out, only=list(PAGES), log=lambda line: None)
    return out


@pytest.fixture(scope="module")
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    p = context.new_page()
    p.refused = []  # every request that was not for a file: the site must need none

    def refuse(route: Any) -> None:
        p.refused.append(route.request.url)
        route.abort()

    context.route(lambda url: not url.startswith("file://"), refuse)
    try:
        yield p
    finally:
        context.close()


def open_page(page: Any, site: Path, name: str) -> str:
    page.refused.clear()
    page.goto((site / f"{name}.html").as_uri())
    page.wait_for_load_state("load")
    assert page.refused == [], f"{name}.html asked the network for {page.refused[:3]}"
    return page.inner_text("body")


@pytest.mark.parametrize("name", list(PAGES))
def test_a_page_shows_its_outputs_pictures_and_records(page: Any, site: Path, name: str):
    text = open_page(page, site, name)
    position = 0
    for expected in PAGES[name]:
        found = text.find(expected, position)
        assert found >= 0, f"{name}.html: {expected!r} is not shown after position {position}"
        position = found + len(expected)
    for error in WIDGET_ERRORS:
        assert error not in text, f"{name}.html shows {error!r}"
    pictures = page.locator(".jp-OutputArea-output img")
    assert pictures.count() >= 1, f"{name}.html shows no picture"
    for i in range(pictures.count()):
        assert pictures.nth(i).evaluate("img => img.complete && img.naturalWidth > 100"), (
            f"{name}.html: picture {i} is broken"
        )
    assert "Run this yourself." in text and f"jupyter lab examples/{name}.ipynb" in text
    # The exercise: the starting code's check says "not yet"; the solution is folded, and passes.
    assert "not yet" in text, f"{name}.html: the exercise's check on the starting code is not shown"
    solution = page.locator("details.course-solution").first
    assert solution.evaluate("d => !d.open"), "the solution starts folded"
    assert not solution.locator(".exercise-check").is_visible()
    solution.locator("summary").click()
    assert "checks pass" in solution.locator(".exercise-check").inner_text()


def test_an_agent_run_shows_its_static_record(page: Any, site: Path):
    text = open_page(page, site, "01_tour")
    record = page.locator(".ipy-agent-record").first
    assert record.is_visible(), "the tour's agent run shows no record"
    assert "Edit notes.txt" in record.inner_text()
    assert "Error displaying widget" not in text
    # The README's picture: an exercise, its check on the starting code, and the folded solution.
    page.set_viewport_size({"width": 1000, "height": 900})
    absolute = (
        "e => { const r = e.getBoundingClientRect(); return [r.top + window.scrollY, r.bottom + window.scrollY]; }"
    )
    top = page.locator("h2", has_text="Exercises").first.evaluate(absolute)[0]
    bottom = page.locator("details.course-solution summary").first.evaluate(absolute)[1]
    clip = {"x": 0, "y": top - 12, "width": 1000, "height": bottom - top + 30}
    page.screenshot(path=str(SCREENSHOTS / "course.png"), clip=clip, full_page=True)


def test_the_index_orders_the_course_with_its_concepts(page: Any, site: Path):
    text = open_page(page, site, "index")
    links = page.locator("ol.chapters > li > a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert hrefs == sorted(hrefs) and set(hrefs) >= {f"{name}.html" for name in PAGES}
    for concept in ("what the model saw versus what you saw", "the lifecycle of a call", "skills"):
        assert concept in text
    links.first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith(hrefs[0])
    page.locator(".course-bar a", has_text="Course index").click()
    page.wait_for_load_state("load")
    assert page.url.endswith("index.html")
