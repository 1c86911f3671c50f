"""The extras install what the teaching material imports, read from the files themselves.

`pip install -e '.[examples]'` must be enough for every teaching notebook (examples/*.ipynb, the
exercises' checks, the MCP server they start, the code the transcripts write and run), and
`pip install -e '.[course]'` for the course build on top of it. A notebook that imports a package
no extra installs stops a learner at that cell, and the course build at that chapter (it once
stopped at chapter 14: `No module named 'pandas'`). Imports are read statically: code cells after
IPython's transform of magics, imports inside functions included; the standard library, the project
itself and the examples' own modules are left out.

A package is installed by an extra when the extra, the extras it includes (`ipy_agent[examples]`)
or the project's own dependencies name it: a package that only comes along with another one is
not promised and must be named.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PROJECT = "ipy_agent"

# Import names whose distribution is named otherwise, for packages not installed here (an installed
# package is found by importlib.metadata.packages_distributions()).
DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python",
    "dateutil": "python-dateutil",
    "IPython": "ipython",
    "markupsafe": "MarkupSafe",
}

# Transcript tool inputs that hold Python the agent writes and then runs: a cell's new source, and a
# .py file's content.
CODE_INPUTS = ("new_source", "content")


def imports_of(source: str) -> set[str]:
    """The top-level names of the absolute imports in `source` (IPython syntax allowed)."""
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _tool_inputs(value: object) -> Iterator[dict[str, object]]:
    if isinstance(value, dict):
        if value.get("type") == "tool_use" and isinstance(value.get("input"), dict):
            yield value["input"]
        for item in value.values():
            yield from _tool_inputs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _tool_inputs(item)


@functools.cache
def teaching_sources(examples: Path = EXAMPLES) -> dict[str, tuple[set[str], set[str]]]:
    """For each teaching file (relative name): (the names it imports, the modules it writes itself)."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for path in sorted(examples.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
        found[str(path.relative_to(examples.parent))] = (set().union(*map(imports_of, code)), set())
    for path in sorted([*examples.glob("*.py"), *examples.glob("servers/*.py")]):
        found[str(path.relative_to(examples.parent))] = (imports_of(path.read_text(encoding="utf-8")), set())
    for path in sorted(examples.glob("transcripts/*.json")):
        names: set[str] = set()
        written: set[str] = set()
        for tool_input in _tool_inputs(json.loads(path.read_text(encoding="utf-8"))):
            target = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
            if target.endswith(".py"):
                written.add(Path(target).stem)
            for key in CODE_INPUTS:
                text = tool_input.get(key)
                if isinstance(text, str) and (key != "content" or target.endswith(".py")):
                    names |= imports_of(text)
        found[str(path.relative_to(examples.parent))] = (names, written)
    return found


def local_modules(examples: Path = EXAMPLES) -> set[str]:
    """The examples' own modules, importable from the notebooks' folder."""
    return {p.stem for p in [*examples.glob("*.py"), *examples.glob("servers/*.py")]} | {examples.name}


@functools.cache
def installed_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(name: str) -> str | None:
    installed = installed_distributions().get(name)
    found = installed[0] if installed else DISTRIBUTIONS.get(name)
    return canonicalize_name(found) if found else None


def extra_installs(pyproject: dict[str, object], extra: str) -> set[str]:
    """The distributions `pip install '.[extra]'` promises: the extra's requirements, the extras of
    this project it includes, and the project's own dependencies."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    extras: dict[str, list[str]] = project["optional-dependencies"]
    names = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    todo, seen = [extra], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        if current not in extras:
            raise AssertionError(f"pyproject.toml has no extra {current!r}")
        seen.add(current)
        for text in extras[current]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == canonicalize_name(PROJECT):
                todo.extend(requirement.extras)
            else:
                names.add(canonicalize_name(requirement.name))
    return names


def missing_from_extra(
    pyproject: dict[str, object], extra: str, sources: dict[str, tuple[set[str], set[str]]], local: set[str]
) -> list[str]:
    """One line per import a source makes that the extra does not install (naming the file, the
    import and the extra)."""
    installs = extra_installs(pyproject, extra)
    problems = []
    for source, (names, written) in sources.items():
        for name in sorted(names - set(sys.stdlib_module_names) - local - written - {PROJECT}):
            distribution = distribution_of(name)
            if distribution is None:
                problems.append(
                    f"{source} imports {name}, whose distribution is unknown here: install it, or name it in "
                    "DISTRIBUTIONS in tests/examples/test_extras.py"
                )
            elif distribution not in installs:
                problems.append(
                    f"{source} imports {name}, but the {extra!r} extra does not install {distribution}: add it to "
                    f"[project.optional-dependencies] {extra} in pyproject.toml"
                )
    return problems


def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_examples_extra_installs_what_every_teaching_notebook_imports():
    problems = missing_from_extra(pyproject(), "examples", teaching_sources(), local_modules())
    assert problems == [], "\n".join(problems)


def test_the_course_extra_installs_the_examples_and_what_the_build_imports():
    build = ROOT / "examples" / "course" / "build.py"
    sources = {**teaching_sources(), "examples/course/build.py": (imports_of(build.read_text()), set())}
    problems = missing_from_extra(pyproject(), "course", sources, local_modules())
    assert problems == [], "\n".join(problems)
    assert extra_installs(pyproject(), "examples") <= extra_installs(pyproject(), "course")


def test_an_extra_without_pandas_is_caught_naming_the_notebook_the_import_and_the_extra():
    """The control: the check fails on the pyproject.toml that stopped the course at chapter 14."""
    project = pyproject()
    extras = project["project"]["optional-dependencies"]  # type: ignore[index]
    for extra in ("examples", "course"):
        extras[extra] = [r for r in extras[extra] if canonicalize_name(Requirement(r).name) != "pandas"]
    problems = missing_from_extra(project, "examples", teaching_sources(), local_modules())
    assert (
        "examples/14_running_cells.ipynb imports pandas, but the 'examples' extra does not install pandas"
        in "\n".join(problems)
    )


def test_imports_are_read_after_magics_and_inside_functions():
    source = "%load_ext ipy_agent\n!pip list\ndef check():\n    from sklearn.linear_model import Ridge\nimport os, numpy.linalg\nfrom . import near\n"
    assert imports_of(source) == {"sklearn", "os", "numpy"}
    assert distribution_of("sklearn") == "scikit-learn"


@pytest.mark.parametrize("cell", ["%%writefile x.py\nimport nothing", "not python at all ("])
def test_a_cell_that_is_not_python_contributes_no_import(cell: str):
    assert imports_of(cell) == set()


README = ROOT / "README.md"


def readme_bash_lines() -> list[str]:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_every_extra_the_readme_installs_exists():
    extras = pyproject()["project"]["optional-dependencies"]  # type: ignore[index]
    named = {
        name
        for line in readme_bash_lines()
        for group in re.findall(r"\.\[([^\]]+)\]", line)
        for name in group.split(",")
    }
    assert {"examples", "course", "test"} <= named
    assert named - set(extras) == set()


def test_the_readme_shows_the_fast_tests_with_their_install_before_the_full_run():
    """A newcomer runs the fast suites first: the command installs only the test extra, and the
    default run (no --full) is the fast one (tests/conftest.py)."""
    lines = readme_bash_lines()
    fast = "python -m pip install -e '.[test]' && python -m pytest -q"
    assert fast in lines
    full = next(i for i, line in enumerate(lines) if line.endswith("python -m pytest -q --full"))
    assert lines.index(fast) < full
