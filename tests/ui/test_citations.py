"""`[cell N]` in the model's answer: a link the page scrolls to cell N with, in the live view
and in the saved record; plain words wherever no page runs (text/plain, the terminal)."""

from __future__ import annotations

from ipy_agent.ui.record import Entry, record_bundle
from ipy_agent.ui.segments import markdown_html

LINK = (
    '[<a class="ipy-agent-cite" href="#ipy-agent-cell-{n}" data-ipy-agent-cell="{n}" '
    'title="Go to cell {n} of the notebook">cell {n}</a>]'
)


def test_a_cited_cell_becomes_a_link_to_that_cell():
    out = markdown_html("The total is wrong in [cell 3]; fixed in [Cell 12].")
    assert LINK.format(n=3) in out
    assert LINK.format(n=12) in out
    assert out.count("ipy-agent-cite") == 2


def test_code_links_of_the_author_and_non_citations_are_left_alone():
    out = markdown_html(
        "`[cell 4]` and [cell 5](https://example.org) and [cell 0] and [cell x] and [cell 6][r]\n\n"
        "[r]: https://example.org/r\n\n```\n[cell 9]\n```\n"
    )
    assert "ipy-agent-cite" not in out
    assert "<code>[cell 4]</code>" in out
    assert '<a href="https://example.org">cell 5</a>' in out
    assert "[cell 0] and [cell x]" in out
    assert "[cell 9]" in out


def test_a_citation_carries_no_html_of_the_models_making():
    out = markdown_html('[cell 3"><img src=x onerror=alert(1)>] and [cell 3]<img src=x>')
    assert "<img" not in out
    assert out.count("ipy-agent-cite") == 1


def test_the_saved_record_keeps_the_link_and_its_plain_text_keeps_the_words():
    bundle = record_bundle(
        [Entry(kind="text", text="Hidden state: `df` comes from [cell 2], deleted since.")],
        outcome="Done",
        footer="",
        markdown=markdown_html,
    )
    assert LINK.format(n=2) in bundle["text/html"]
    assert "Hidden state: `df` comes from [cell 2], deleted since." in bundle["text/plain"]
