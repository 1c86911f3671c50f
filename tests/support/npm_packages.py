"""Real packages from the npm registry, fetched at test time with `npm pack` into a cache.

Nothing of theirs is in the repository: a test that needs one gets its unpacked folder here. The
versions are pinned; the cache (`$IPY_AGENT_TEST_CACHE`, else ~/.cache/ipy_agent-tests) keeps
each one, so the registry is asked once per machine. Without npm or the registry, the test is
skipped with the reason, except in CI (CI=true), where it fails: CI has both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

__all__ = ["PLUGIN_PACKAGE", "npm_package"]

# A Claude Code plugin published on npm: .claude-plugin/plugin.json and marketplace.json,
# 18 commands, 2 agents, hooks/hooks.json.
PLUGIN_PACKAGE = ("selfish-pipeline", "1.3.0")


def _cache() -> Path:
    return Path(os.environ.get("IPY_AGENT_TEST_CACHE") or Path.home() / ".cache" / "ipy_agent-tests") / "npm"


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must reach the npm registry: {why}")
    pytest.skip(f"needs the npm registry (offline?): {why}")


def npm_package(name: str, version: str) -> Path:
    """The unpacked folder of `name@version` (its `package/`), fetched once into the cache."""
    folder = _cache() / f"{name}-{version}"
    if (folder / "package" / "package.json").is_file():
        return folder / "package"
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is not installed")
    download = _cache() / "download"
    download.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [str(npm), "pack", f"{name}@{version}", "--silent", "--pack-destination", str(download)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        _unavailable(f"npm pack {name}@{version} took over 120 s")
    if done.returncode != 0:
        _unavailable(f"npm pack {name}@{version} failed: {done.stderr.strip()[-300:]}")
    tgz = download / done.stdout.strip().splitlines()[-1]
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(tgz) as tar:
        tar.extractall(partial, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder / "package"
