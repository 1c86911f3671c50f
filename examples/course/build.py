"""Build the course: execute every teaching notebook offline and render a static HTML site.

    python -m examples.course.build                 # all notebooks -> build/course/
    python -m examples.course.build --out DIR 01 16 # only these (by number), into DIR
    python -m examples.course.build --jobs 1        # one notebook at a time (default: 2)

The notebooks are found in examples/ (`NN_name.ipynb`, ordered by number), so a new one joins the
course when it is added. Each runs in a real kernel with no API key (its ScriptedModel replays
the transcript in examples/transcripts), exactly as `tests/examples/test_notebooks.py` runs it.
The site is plain HTML and CSS: nothing is fetched when it is built or read.

A chapter fails, naming the notebook and the cell:
- on an error in any cell (nbclient raises; the starting code of an exercise must not raise:
  its check prints what is missing instead);
- on a widget output without a static fallback. An agent run's widget view is replaced by its
  static record (HTML and text) when the run ends (ipy_agent/ui/record.py); the record is what
  the page shows, never "Error displaying widget".
A failing chapter does not stop the others: the site is written with that chapter's page saying it
failed and why, the index marks it failed, and the build exits non-zero naming every failed chapter.

Nobody clicks in a build: the kernel gets IPY_AGENT_COURSE_AUTOANSWER=1, so each prompt is answered
through its buttons as the transcript's scene says, and the cell says so (ipy_agent/ui/course_answers.py).
In JupyterLab the learner answers them.

Each notebook is executed once, here: the site also keeps each executed notebook (its outputs,
widget views replaced by their records) as `executed/NN_name.ipynb`, and the tests read those when
IPY_AGENT_COURSE_SITE names the site (`.ci/run` does) instead of executing the notebooks again:
tests/examples/test_notebooks.py checks what each one shows, tests/browser/test_teaching_notebooks.py
saves them in a clone as a learner's working copy.

Each page gets a "Run this yourself" header with the command, a bar linking the course, and
exercise solutions folded into a `<details>` (cells tagged `solution`, collapsed in JupyterLab
too). The index lists the notebooks in order with the concepts each covers.
"""

from __future__ import annotations

import argparse
import html
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete
from nbclient.util import ensure_async

EXAMPLES = Path(__file__).resolve().parents[1]
ROOT = EXAMPLES.parent
TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_OUT = ROOT / "build" / "course"
EXECUTED = "executed"  # the site's folder of executed notebooks (`executed/NN_name.ipynb`)
CELL_TIMEOUT = 180  # seconds for one cell, as in tests/examples/test_notebooks.py
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATIC = ("text/html", "image/png", "image/svg+xml")  # what a reader can see without a kernel

# The concepts each notebook teaches, for the index (by number; a notebook not listed here is
# still in the course, described by its title and question).
CONCEPTS: dict[str, list[str]] = {
    "01": ["%agent end to end", "what the model saw versus what you saw"],
    "02": ["the tool contract", "fail-closed defaults"],
    "03": ["the registry", "rules and modes"],
    "04": ["the lifecycle of a call", "hooks"],
    "05": ["concurrency", "batches, cancellation, interrupts"],
    "06": ["budgets", "spill files and previews"],
    "07": ["prompts", "routing between tools"],
    "08": ["read state", "edit-before-read, stale files"],
    "09": ["the live notebook", "kernel variables, cell tools"],
    "10": ["containment", "the classifier and the OS sandbox"],
    "11": ["long sessions", "clearing and compaction"],
    "12": ["MCP", "a server's tools under the same contract", "the notebook served to an outside agent"],
    "13": ["review and rewind"],
    "14": ["running cells"],
    "15": ["delegation"],
    "16": ["instructions", "skills"],
    "17": ["reproducibility", "hidden state, the verify gate"],
}


class BuildError(Exception):
    """Why the course (or a chapter of it) did not build, naming the notebook and the cell."""


def _chapters(count: int) -> str:
    return f"{count} chapter" + ("" if count == 1 else "s")


class ChaptersFailed(BuildError):
    """Some chapters failed; the site was written all the same, with their pages marked failed."""

    def __init__(self, out: Path, failed: dict[str, str]) -> None:
        self.out, self.failed = out, failed
        names = ", ".join(failed)
        details = "\n\n".join(failed.values())
        super().__init__(
            f"{_chapters(len(failed))} failed: {names}. The site in {out} shows them marked failed.\n\n{details}"
        )


@dataclass
class Chapter:
    path: Path
    number: str
    title: str
    question: str

    @property
    def href(self) -> str:
        return self.path.stem + ".html"

    @property
    def concepts(self) -> list[str]:
        return CONCEPTS.get(self.number, [])


def discover(examples: Path = EXAMPLES, only: list[str] | None = None) -> list[Chapter]:
    """The teaching notebooks, ordered by number (`only`: numbers or stems to keep)."""
    chapters = []
    for path in sorted(examples.glob("[0-9][0-9]_*.ipynb")):
        number = path.stem[:2]
        if only and number not in only and path.stem not in only:
            continue
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0].source if nb.cells else ""
        heading = next((ln[2:].strip() for ln in first.splitlines() if ln.startswith("# ")), path.stem)
        m = re.search(r"\*\*The question:\*\*\s*(.+?)(?:\n\s*\n|$)", first, re.S)
        question = " ".join(m.group(1).split()) if m else ""
        chapters.append(Chapter(path, number, heading, question))
    if only and len(chapters) != len(only):
        found = {c.number for c in chapters} | {c.path.stem for c in chapters}
        raise BuildError(f"no notebook {sorted(set(only) - found)} in {examples}")
    return chapters


class CourseClient(NotebookClient):  # type: ignore[misc]
    """nbclient, except that a display update sent while another cell runs is applied too.

    A background agent run (`%agent --background`) ends while a later cell runs, and its record
    replaces the widget view by `update_display_data` with that later cell as the parent; plain
    nbclient drops it, leaving the live view (a widget) in the page. JupyterLab applies it.
    """

    async def _async_poll_output_msg(self, parent_msg_id: str, cell: Any, cell_index: int) -> None:
        assert self.kc is not None
        while True:
            msg = await ensure_async(self.kc.iopub_channel.get_msg(timeout=None))
            if msg["parent_header"].get("msg_id") == parent_msg_id:
                try:
                    self.process_message(msg, cell, cell_index)
                except CellExecutionComplete:
                    return
            elif msg["msg_type"] == "update_display_data":
                display_id = (msg["content"].get("transient") or {}).get("display_id")
                if display_id:
                    self._update_display_id(display_id, msg)


# The last cell the build runs (and removes): a moment for background runs to publish their records.
SETTLE = "import asyncio as _course_asyncio\nawait _course_asyncio.sleep(1.0)"


def execute(path: Path, config_dir: Path) -> nbformat.NotebookNode:
    """Run every cell of the notebook in a fresh kernel, offline; raise BuildError on any error."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(SETTLE))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_"))}
    env.update(IPY_AGENT_CONFIG_DIR=str(config_dir), MPLBACKEND="module://matplotlib_inline.backend_inline")
    env["IPY_AGENT_COURSE_AUTOANSWER"] = "1"  # nobody clicks here: prompts answered as the scene says, and said so
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        CourseClient(
            nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    except Exception as e:
        plain = re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # the traceback's colours
        raise BuildError(f"{path.name}: a cell failed while building the course:\n{plain}") from e
    finally:
        os.environ.clear()
        os.environ.update(saved)
    nb.cells.pop()
    return nb


def make_static(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Replace widget views by their static fallback; fail on a widget that has none."""
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            if not any(kind in data for kind in STATIC):
                text = str(data.get("text/plain", ""))[:200]
                raise BuildError(
                    f"{name}: cell {index} shows a widget with no static fallback (text/plain: {text!r}). "
                    "A page without a kernel would show 'Error displaying widget'. Give the display a "
                    "text/html record that replaces the widget when it is done (as ipy_agent/ui/record.py "
                    "does for agent runs), or display a static picture instead."
                )
            del data[WIDGET_VIEW]
    nb.metadata.pop("widgets", None)
    return nb


def run_yourself(chapter: Chapter) -> str:
    name = chapter.path.name
    return (
        "> **Run this yourself.** From a checkout of the repository: `pip install -e '.[examples]'`, then "
        f"`jupyter lab examples/{name}` and run the cells in order. It runs offline (a scripted model replays "
        f"the transcript); with `ANTHROPIC_API_KEY` set the same cells talk to Claude. "
        "Exercises end the page: edit the cell marked *your turn*, then run its check."
    )


def _exporter() -> Any:
    """nbconvert's HTML exporter with the course template, linking the stylesheets of JupyterLab's
    look (written once into the site by `write_styles`) instead of inlining them in every page."""
    import markupsafe
    from nbconvert import HTMLExporter

    class CourseExporter(HTMLExporter):  # type: ignore[misc]
        def _init_resources(self, resources: dict[str, Any]) -> dict[str, Any]:
            resources = super()._init_resources(resources)
            resources["include_css"] = lambda name: markupsafe.Markup(
                f'<link rel="stylesheet" href="{html.escape(Path(name).name)}">'
            )
            return resources

    return CourseExporter(template_name="course", extra_template_basedirs=[str(TEMPLATES)])


def write_styles(site: Path) -> None:
    """The stylesheets the pages link (`static/*.css` of the template they extend)."""
    env = _exporter().environment
    for name in ("index.css", "theme-light.css"):
        (site / name).write_text(env.loader.get_source(env, f"static/{name}")[0], encoding="utf-8")


def export(nb: nbformat.NotebookNode, chapter: Chapter, prev: Chapter | None, nxt: Chapter | None) -> str:
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(run_yourself(chapter)))
    nb.metadata["title"] = chapter.title.replace("`", "")  # the browser's tab shows no Markdown
    link = lambda c: {"href": c.href, "title": c.title.replace("`", "")} if c else None  # noqa: E731
    body, _ = _exporter().from_notebook_node(nb, resources={"course": {"prev": link(prev), "next": link(nxt)}})
    return str(body)


def _inline_code(text: str) -> str:
    """Escaped text, with `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _sentence(text: str) -> str:
    """A notebook's question as a sentence of its own: it continues "**The question:**" in the
    notebook, so it may start in lower case."""
    return text[:1].upper() + text[1:]


FAILED_MARK = '<span class="failed-mark">failed to build</span>'


def index_html(chapters: list[Chapter], failed: dict[str, str] | None = None) -> str:
    """The course's front page; `failed`: the file names of chapters that failed, with why."""
    failed = failed or {}
    items = []
    for c in chapters:
        concepts = ", ".join(html.escape(x) for x in c.concepts)
        broken = c.path.name in failed
        items.append(
            ('<li class="failed">' if broken else "<li>")
            + f'<a href="{c.href}">{_inline_code(c.title)}</a>'
            + (f" {FAILED_MARK}" if broken else "")
            + (f'<div class="concepts">{concepts}</div>' if concepts else "")
            + (f'<div class="question">{_inline_code(_sentence(c.question))}</div>' if c.question else "")
            + "</li>"
        )
    warning = (
        f'<p class="failed-note">{_chapters(len(failed))} failed to build and show why instead of their '
        "cells: " + ", ".join(html.escape(name) for name in failed) + ".</p>"
        if failed
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>ipy_agent: the tool runtime, a course</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 52em; margin: 2em auto; padding: 0 1em; line-height: 1.45; }}
li {{ margin: 0 0 1.1em 0; }} li a {{ font-weight: 600; font-size: 1.05em; }}
.concepts {{ color: #0b6bcb; font-size: 0.92em; }} .question {{ color: #444; font-size: 0.95em; }}
code {{ background: #f3f3f3; padding: 0 0.2em; }}
.failed-mark {{ color: #fff; background: #b42318; border-radius: 3px; padding: 0 0.4em; font-size: 0.85em; }}
.failed-note {{ border-left: 4px solid #b42318; background: #fef3f2; padding: 0.5em 0.8em; }}
</style></head><body>
<h1>ipy_agent: how a tool runtime works, a course</h1>
{warning}
<p>Each chapter is a notebook from the repository's <code>examples/</code>, run offline with a scripted
model and shown here with its outputs and pictures. Each opens with a question, shows the concept
happening, draws a picture from the agent's own records, says what to notice, and ends with exercises
whose checks run in the notebook. To run one yourself: <code>pip install -e '.[examples]'</code>, then
<code>jupyter lab examples/</code>.</p>
<ol class="chapters">
{chr(10).join(items)}
</ol>
</body></html>
"""


def failed_page(chapter: Chapter, error: str) -> str:
    """The page of a chapter that failed to build: what failed and why, and how to run it yourself."""
    title = _inline_code(chapter.title)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(chapter.title.replace("`", ""))} (failed to build)</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; line-height: 1.45; }}
.course-failed {{ border-left: 4px solid #b42318; background: #fef3f2; padding: 0.6em 1em; }}
pre {{ white-space: pre-wrap; background: #f6f8fa; padding: 0.8em; overflow-x: auto; }}
</style></head><body class="course-failed-page">
<nav class="course-bar"><a href="index.html">Course index</a></nav>
<h1>{title}</h1>
<div class="course-failed"><strong>This chapter failed to build.</strong> The course build could not run
<code>examples/{html.escape(chapter.path.name)}</code>, so this page shows why instead of its cells.</div>
<pre class="course-error">{html.escape(error)}</pre>
<p>To see it fail in place: <code>pip install -e '.[examples]'</code>, then
<code>jupyter lab examples/{html.escape(chapter.path.name)}</code> and run the cells in order.</p>
</body></html>
"""


@dataclass
class ChapterPage:
    """One chapter's page as a worker made it; `error` says why it failed (the page then says so)."""

    href: str
    page: str
    seconds: float
    error: str | None = None
    executed: str | None = None  # the executed notebook (JSON), when it ran


def _chapter_page(args: tuple[Chapter, Chapter | None, Chapter | None, Path]) -> ChapterPage:
    """Execute one chapter and render its page (in a worker process), or its failed page."""
    chapter, prev, nxt, config_dir = args
    started = time.monotonic()
    try:
        nb = make_static(execute(chapter.path, config_dir), chapter.path.name)
        executed = nbformat.writes(nb)
        page = export(nb, chapter, prev, nxt)
    except Exception as e:
        error = str(e) if isinstance(e, BuildError) else f"{chapter.path.name}: {type(e).__name__}: {e}"
        return ChapterPage(chapter.href, failed_page(chapter, error), time.monotonic() - started, error)
    return ChapterPage(chapter.href, page, time.monotonic() - started, executed=executed)


def executed_notebook(site: Path, name: str) -> nbformat.NotebookNode:
    """The notebook `name` (`NN_name.ipynb`) as the build of `site` executed it. BuildError when the
    build did not execute it (its chapter failed: the error is the page's) or executed another
    version of it than examples/ has now (the site is older than the notebook)."""
    path = site / EXECUTED / name
    if not path.exists():
        failed = site / (Path(name).stem + ".html")
        why = ""
        if failed.exists() and "course-failed-page" in (text := failed.read_text(encoding="utf-8")):
            why = " Its chapter failed to build:\n" + html.unescape(
                text.split('<pre class="course-error">', 1)[-1].split("</pre>", 1)[0]
            )
        raise BuildError(f"the course site {site} has no executed {name}.{why}")
    nb = nbformat.read(path, as_version=4)
    current = nbformat.read(EXAMPLES / name, as_version=4)
    if [c.source for c in nb.cells] != [c.source for c in current.cells]:
        raise BuildError(
            f"the course site {site} executed another version of {name} than examples/ has now; "
            "build it again: python -m examples.course.build"
        )
    return nb


def build(
    out: Path = DEFAULT_OUT,
    only: list[str] | None = None,
    *,
    jobs: int = 2,
    log: Any = print,
    examples: Path = EXAMPLES,
) -> list[Path]:
    """Execute and render the chapters into `out` (replaced when the build is done); the pages.

    A chapter that fails gets a page saying why, marked failed in the index; the others are built
    all the same, the site is written, then ChaptersFailed names the failed ones.
    `jobs` notebooks run at once, each in its own process and kernel: most of a notebook's time is
    spent waiting (on subprocesses, sleeps standing in for a person), so two overlap well."""
    chapters = discover(examples, only=only)
    if not chapters:
        raise BuildError(f"no teaching notebooks (NN_name.ipynb) in {examples}")
    with tempfile.TemporaryDirectory(prefix="ipy_agent_course_") as tmp:
        staged = Path(tmp) / "site"
        staged.mkdir()
        work = [
            (
                c,
                chapters[i - 1] if i else None,
                chapters[i + 1] if i + 1 < len(chapters) else None,
                Path(tmp) / f"config{i}",
            )
            for i, c in enumerate(chapters)
        ]
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads or loops inherited
        failed: dict[str, str] = {}
        with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
            for chapter, result in zip(chapters, pool.map(_chapter_page, work)):
                (staged / result.href).write_text(result.page, encoding="utf-8")
                if result.executed is not None:
                    (staged / EXECUTED).mkdir(exist_ok=True)
                    (staged / EXECUTED / chapter.path.name).write_text(result.executed, encoding="utf-8")
                log(f"{result.href:40s} {result.seconds:5.1f} s" + ("  FAILED" if result.error else ""))
                if result.error:
                    failed[chapter.path.name] = result.error
        (staged / "index.html").write_text(index_html(chapters, failed), encoding="utf-8")
        write_styles(staged)
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, out)
    if failed:
        raise ChaptersFailed(out, failed)
    return [out / "index.html", *(out / c.href for c in chapters)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="notebook numbers or names to build (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (default: 2)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--examples", type=Path, default=EXAMPLES, help=f"the folder of the notebooks (default: {EXAMPLES})"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        pages = build(args.out, args.only or None, jobs=args.jobs, examples=args.examples)
    except BuildError as e:
        print(f"course build failed: {e}", file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(
        f"built {len(pages) - 1} chapters and the index into {args.out} "
        f"in {time.monotonic() - started:.0f} s ({size / 1e6:.1f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
