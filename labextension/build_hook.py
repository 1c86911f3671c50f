"""Build the JupyterLab extension during `pip install`, or explain why not and go on without it.

hatch-jupyter-builder calls `build()` for every wheel, sdist and editable install. The
extension needs Node >= 20.19 (its bundler, Rspack, says so); without it the Python package is
still worth installing (every feature but the live notebook works), so a missing or old Node
gives a warning, not a failed install. `IPY_AGENT_REQUIRE_LABEXTENSION=1` (set by CI) makes it
an error instead, so a broken build never passes unnoticed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

MIN_NODE = (20, 19)
HERE = Path(__file__).resolve().parent
OUTPUT = HERE.parent / "ipy_agent" / "labextension"
PROTOCOL = HERE.parent / "ipy_agent" / "notebook" / "protocol.json"  # src/handler.ts imports it


def _node_problem() -> str | None:
    node = shutil.which("node")
    if node is None:
        return "Node.js is not on PATH"
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"`node --version` failed ({e})"
    match = re.match(r"v(\d+)\.(\d+)", out)
    if not match or (int(match[1]), int(match[2])) < MIN_NODE:
        return f"Node.js {out or '(unknown version)'} is older than {MIN_NODE[0]}.{MIN_NODE[1]}"
    return None


def _up_to_date() -> bool:
    built = OUTPUT / "static" / "style.js"
    if not built.exists() or not (OUTPUT / "package.json").exists() or not (OUTPUT / "install.json").exists():
        return False
    sources = [*HERE.joinpath("src").glob("*.ts"), HERE / "package.json", PROTOCOL]
    return built.stat().st_mtime >= max(p.stat().st_mtime for p in sources)


def build(target_name: str, version: str, **_: object) -> None:
    if _up_to_date():
        return
    problem = _node_problem()
    if problem is None and shutil.which("jlpm") is None:
        problem = "jlpm (from the jupyterlab package) is not on PATH"
    if problem is not None:
        message = (
            f"ipy_agent: the JupyterLab extension was not built: {problem}. The Python package installs "
            "without it; the live-notebook tools stay off until it is built (install Node >= 20.19 and "
            "reinstall)."
        )
        if os.environ.get("IPY_AGENT_REQUIRE_LABEXTENSION") == "1":
            raise RuntimeError(message)
        warnings.warn(message, stacklevel=1)
        return
    from hatch_jupyter_builder import npm_builder

    npm_builder(target_name, version, path=str(HERE), build_cmd="build", npm=["jlpm"], force=True)
    # Tells `jupyter labextension list` which Python package installed the extension.
    shutil.copyfile(HERE / "install.json", OUTPUT / "install.json")
