"""Path corpus: every file tool, every way to spell a path, the permission outcome a person expects.

Targets inside and outside the working directory, through `..`, symlinks in and out, `~`,
unicode, spaces, very long names, missing files and files deny rules cover; each spelled several
ways (relative, `./`, absolute, with a `..` detour, with doubled slashes). The expected outcome
is written by hand per target (the oracle is not the code under test): read tools in default
mode, edit tools in default and in acceptEdits mode. The permission decision is the real one
(the tool's own check, then `decide`, as the lifecycle runs them).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.permissions.decide import decide
from ipy_agent.runtime.lifecycle import parse_input
from ipy_agent.tools import builtin_tools
from tests.helpers import write_tree

DENY = ["Read(secret/**)", "Read(**/.env)", "Edit(locked/**)"]
LONG = "/".join(["d" * 60] * 3) + "/" + "f" * 100 + ".txt"

# target -> (read tools in default mode, edit tools in default mode, edit tools in acceptEdits)
TARGETS: dict[str, tuple[str, str, str]] = {
    "a.txt": ("allow", "ask", "allow"),
    "sp ace.txt": ("allow", "ask", "allow"),
    "ünï cödé.txt": ("allow", "ask", "allow"),
    "sub/b.txt": ("allow", "ask", "allow"),
    "missing.txt": ("allow", "ask", "allow"),
    "sub/missing/deeper.txt": ("allow", "ask", "allow"),
    LONG: ("allow", "ask", "allow"),
    "secret/key.txt": ("deny", "ask", "allow"),
    ".env": ("deny", "ask", "allow"),
    "sub/.env": ("deny", "ask", "allow"),
    "locked/x.txt": ("allow", "deny", "deny"),
    "link_in": ("allow", "ask", "allow"),
    "link_secret": ("deny", "ask", "allow"),
    "link_out": ("ask", "ask", "ask"),
    "link_dir_out/o.txt": ("ask", "ask", "ask"),
    "../outside/o.txt": ("ask", "ask", "ask"),
    "{OUT}/o.txt": ("ask", "ask", "ask"),
    "~/ipy_agent_corpus_missing.txt": ("ask", "ask", "ask"),
    "/etc/hostname": ("ask", "ask", "ask"),
}


def spellings(target: str, project: Path, outside: Path) -> list[str]:
    if target.startswith(("~", "/")):
        return [target, target.replace("/", "//", 1), os.path.dirname(target) + "/./" + os.path.basename(target)]
    if target.startswith("{OUT}"):
        abs_ = target.replace("{OUT}", str(outside))
        return [abs_, abs_.replace("/o.txt", "/../outside/o.txt"), abs_.replace("/o.txt", "//o.txt")]
    absolute = str(project / target)
    out = [target, "./" + target, absolute]
    if not target.startswith(".."):
        out.append(f"sub/../{target}")
        out.append(str(project / "sub" / ".." / target))
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("paths")
    project, outside = base / "project", base / "outside"
    write_tree(
        project,
        {
            "a.txt": "a\n",
            "sp ace.txt": "s\n",
            "ünï cödé.txt": "u\n",
            "sub/b.txt": "b\n",
            "sub/.env": "E=1\n",
            "secret/key.txt": "k\n",
            ".env": "E=1\n",
            "locked/x.txt": "x\n",
            LONG: "long\n",
        },
    )
    write_tree(outside, {"o.txt": "o\n"})
    (project / "link_in").symlink_to(project / "sub" / "b.txt")
    (project / "link_secret").symlink_to(project / "secret" / "key.txt")
    (project / "link_out").symlink_to(outside / "o.txt")
    (project / "link_dir_out").symlink_to(outside)
    agent = Agent(model=ScriptedModel([]), cwd=project, tools=builtin_tools(), deny=DENY)
    return agent, project, outside


def _input(tool: str, path: str) -> dict:
    return {
        "Read": {"file_path": path},
        "Write": {"file_path": path, "content": "x"},
        "Edit": {"file_path": path, "old_string": "a", "new_string": "b"},
        "NotebookEdit": {"notebook_path": path, "new_source": "x", "cell_id": "cell-0"},
        "Glob": {"pattern": "*", "path": path},
        "Grep": {"pattern": "x", "path": path},
    }[tool]


async def _outcome(agent: Agent, tool_name: str, path: str, mode: str) -> str:
    tool = next(t for t in agent.tools if t.name == tool_name)
    inp = parse_input(tool, _input(tool_name, path))
    assert not isinstance(inp, str), inp
    ctx = agent.tool_context("t1")
    check = await tool.check_permissions(inp, ctx)
    return decide(
        tool=tool, inp=inp, ctx=ctx, rules=agent.rules, mode=mode, tool_check=check, hook_decision=None
    ).behavior


READ_TOOLS = ("Read", "Glob", "Grep")
EDIT_TOOLS = ("Edit", "Write", "NotebookEdit")


@pytest.mark.parametrize("tool_name", READ_TOOLS + EDIT_TOOLS)
async def test_path_corpus(world, tool_name):
    agent, project, outside = world
    tried, wrong = 0, []
    modes = ("default",) if tool_name in READ_TOOLS else ("default", "acceptEdits")
    for target, expected in TARGETS.items():
        for spelled in spellings(target, project, outside):
            for mode in modes:
                want = expected[0] if tool_name in READ_TOOLS else expected[1 if mode == "default" else 2]
                got = await _outcome(agent, tool_name, spelled, mode)
                tried += 1
                if got != want:
                    wrong.append(f"{tool_name} {spelled!r} ({mode}): {got}, expected {want}")
    print(f"\n[path corpus] {tool_name}: {tried} cases, {len(wrong)} wrong")
    assert tried >= 60
    assert not wrong, "\n".join(wrong)


def test_every_outcome_is_covered():
    counts = Counter(v for row in TARGETS.values() for v in row)
    assert counts["allow"] and counts["ask"] and counts["deny"]
