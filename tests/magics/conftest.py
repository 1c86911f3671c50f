"""Fixtures for the magics tests: a fresh InteractiveShell with ipy_agent loaded, in tmp_path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config


def _fresh_shell(config: Config | None = None) -> InteractiveShell:
    InteractiveShell.clear_instance()
    cfg = config or Config()
    cfg.HistoryManager.enabled = False  # no sqlite history file in the person's home
    return InteractiveShell.instance(config=cfg)


@pytest.fixture
def make_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IPY_AGENT_NONINTERACTIVE", raising=False)
    shells: list[InteractiveShell] = []

    def make(config: Config | None = None, load: bool = True) -> InteractiveShell:
        sh = _fresh_shell(config)
        if load:
            sh.run_line_magic("load_ext", "ipy_agent")
        shells.append(sh)
        return sh

    yield make
    InteractiveShell.clear_instance()


@pytest.fixture
def shell(make_shell: Any) -> InteractiveShell:
    return make_shell()


@pytest.fixture
def magics(shell: InteractiveShell) -> Any:
    return shell.magics_manager.registry["AgentMagics"]


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., str]:
    """Write a ScriptedModel transcript; returns its path (relative names work too)."""
    count = [0]

    def write(*turns: Any, name: str | None = None) -> str:
        count[0] += 1
        path = tmp_path / (name or f"script{count[0]}.json")
        path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
        return str(path)

    return write
