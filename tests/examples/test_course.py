"""The course builder's own rules, without a kernel: which notebooks it finds and in what order,
what it does with widget outputs, and what the index and the page header say. (The build of real
pages, and what Chromium shows of them, is tests/browser/test_course_site.py.)"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from examples.course import build as course

WIDGET = {"model_id": "abc", "version_major": 2, "version_minor": 0}


def notebook(*outputs: dict[str, object]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%agent fix it")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data) for data in outputs]
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · A title\n\n**The question:** why?\n\nMore."), cell]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


def test_a_widget_with_a_static_record_shows_the_record_and_no_widget_state():
    record = '<div class="ipy-agent-record">Edited notes.txt</div>'
    nb = course.make_static(
        notebook({course.WIDGET_VIEW: WIDGET, "text/html": record, "text/plain": "Edited"}), "99_x.ipynb"
    )
    assert nb.cells[1].outputs[0].data == {"text/html": record, "text/plain": "Edited"}
    assert "widgets" not in nb.metadata


def test_a_widget_without_a_static_fallback_fails_the_build_and_says_how_to_fix_it():
    nb = notebook({course.WIDGET_VIEW: WIDGET, "text/plain": "IntSlider(value=3)"})
    with pytest.raises(course.BuildError) as e:
        course.make_static(nb, "99_x.ipynb")
    message = str(e.value)
    assert "99_x.ipynb: cell 1 shows a widget with no static fallback" in message
    assert "IntSlider(value=3)" in message and "text/html record" in message


def test_notebooks_are_found_by_number_so_new_ones_join_the_course(tmp_path: Path):
    for name in ("16_skills", "02_contract", "13_review", "notes", "1_bad"):
        nb = notebook()
        nb.cells[0].source = f"# {name}\n\n**The question:** what is {name}?\n\nMore text."
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    chapters = course.discover(tmp_path)
    assert [c.path.stem for c in chapters] == ["02_contract", "13_review", "16_skills"]
    assert chapters[1].title == "13_review" and chapters[1].question == "what is 13_review?"
    assert chapters[1].concepts == ["review and rewind"]
    with pytest.raises(course.BuildError, match=r"no notebook \['07'\]"):
        course.discover(tmp_path, only=["02", "07"])


def test_the_index_lists_the_chapters_in_order_with_their_concepts():
    chapters = course.discover()
    page = course.index_html(chapters)
    positions = [page.index(f'href="{c.href}"') for c in chapters]
    assert positions == sorted(positions) and len(chapters) >= 13
    for concept in ("fail-closed defaults", "the registry", "the lifecycle of a call", "concurrency", "budgets"):
        assert concept in page
    for concept in ("prompts", "read state", "the live notebook", "containment", "long sessions", "MCP"):
        assert concept in page


def test_each_page_says_how_to_run_it_yourself():
    chapter = course.discover(only=["02"])[0]
    header = course.run_yourself(chapter)
    assert "jupyter lab examples/02_tool_contract.ipynb" in header and "pip install -e '.[examples]'" in header


@pytest.mark.kernel
def test_a_failing_chapter_is_marked_failed_and_the_others_are_built_and_the_build_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    examples, out = tmp_path / "examples", tmp_path / "site"
    examples.mkdir()
    out.mkdir()
    (out / "index.html").write_text("the last build")
    for name, code in (
        ("03_broken", "print('fine')\nraise ValueError('the data file is missing')"),
        ("04_good", "print('the good chapter ran', 6 * 7)"),
    ):
        nb = notebook()
        nb.cells[0].source = f"# {name[:2]} · The `{name}` chapter\n\n**The question:** why?\n\nMore."
        nb.cells[1] = nbformat.v4.new_code_cell(code)
        nbformat.write(nb, examples / f"{name}.ipynb")

    status = course.main(["--examples", str(examples), "--out", str(out), "--jobs", "1"])

    assert status == 1
    printed = capsys.readouterr()
    assert "1 chapter failed: 03_broken.ipynb" in printed.err
    assert "ValueError: the data file is missing" in printed.err
    assert "04_good.html" in printed.out and "03_broken.html" in printed.out
    good = (out / "04_good.html").read_text()
    assert "the good chapter ran 42" in good and "failed to build" not in good
    broken = (out / "03_broken.html").read_text()
    assert "This chapter failed to build." in broken
    assert "03_broken.ipynb: a cell failed while building the course" in broken
    assert "ValueError: the data file is missing" in broken
    index = (out / "index.html").read_text()
    assert '<li class="failed"><a href="03_broken.html">' in index and index.count("failed to build") == 2
    assert '<li><a href="04_good.html">' in index


def test_a_failed_chapter_is_marked_in_the_index_and_its_page_says_why():
    chapters = [
        course.Chapter(Path("03_a.ipynb"), "03", "03 · A", ""),
        course.Chapter(Path("04_b.ipynb"), "04", "04 · B `x`", ""),
    ]
    index = course.index_html(chapters, {"04_b.ipynb": "04_b.ipynb: a cell failed: <KeyError>"})
    assert '<li class="failed"><a href="04_b.html">04 · B <code>x</code></a> <span class="failed-mark">' in index
    assert '<li><a href="03_a.html">' in index and "1 chapter failed to build" in index
    assert "failed to build" not in course.index_html(chapters) and '<li class="failed">' not in course.index_html(
        chapters
    )
    page = course.failed_page(chapters[1], "04_b.ipynb: a cell failed: <KeyError>")
    assert "This chapter failed to build." in page and "a cell failed: &lt;KeyError&gt;" in page
    assert "<title>04 · B x (failed to build)</title>" in page and "jupyter lab examples/04_b.ipynb" in page


def test_the_index_shows_questions_as_sentences_with_code_as_code():
    """A question continues "**The question:**" in its notebook: in the index it starts a sentence,
    and its `code` is code, not backticks."""
    page = course.index_html(course.discover(only=["01"]))
    question = page[page.index('<div class="question">') :].split("</div>")[0]
    assert question.startswith('<div class="question">You type <code>%agent fix the typo in notes.txt</code> in')
    assert "`" not in page


def test_a_page_title_and_its_links_show_no_backticks():
    chapters = [course.Chapter(Path(f"0{n}_x.ipynb"), f"0{n}", f"0{n} · Type `%agent`", "") for n in (1, 2, 3)]
    page = course.export(notebook(), chapters[1], chapters[0], chapters[2])
    assert "<title>02 · Type %agent</title>" in page
    assert '<a href="01_x.html">← 01 · Type %agent</a><a href="03_x.html">03 · Type %agent →</a>' in page
    assert "`%agent`" not in page.split("<body")[0]


def test_code_in_a_title_is_shown_as_code_in_the_index():
    chapter = course.Chapter(Path("01_tour.ipynb"), "01", "01 · What happens when you type `%agent`?", "")
    assert "<code>%agent</code>?</a>" in course.index_html([chapter])


def test_the_executed_notebooks_are_read_back_only_as_the_site_built_them_from_examples_now(tmp_path: Path):
    """The tests read the notebooks the build executed (IPY_AGENT_COURSE_SITE) instead of running
    them again: only when the site holds this version of the notebook, else they say why."""
    name = "01_tour.ipynb"
    chapter = course.discover(only=["01"])[0]
    (tmp_path / course.EXECUTED).mkdir()
    with pytest.raises(course.BuildError, match=r"has no executed 01_tour.ipynb\.$"):
        course.executed_notebook(tmp_path, name)
    (tmp_path / chapter.href).write_text(course.failed_page(chapter, "01_tour.ipynb: a cell failed: <KeyError>"))
    with pytest.raises(
        course.BuildError, match=r"Its chapter failed to build:\n01_tour.ipynb: a cell failed: <KeyError>"
    ):
        course.executed_notebook(tmp_path, name)

    nb = nbformat.read(chapter.path, as_version=4)
    code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[code].outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(nb, tmp_path / course.EXECUTED / name)
    assert course.executed_notebook(tmp_path, name).cells[code].outputs[0].text == "ran\n"
    nb.cells[code].source += "\nprint('an older version')"
    nbformat.write(nb, tmp_path / course.EXECUTED / name)
    with pytest.raises(course.BuildError, match="executed another version of 01_tour.ipynb"):
        course.executed_notebook(tmp_path, name)
