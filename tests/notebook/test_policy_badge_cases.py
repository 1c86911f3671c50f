"""The page's policy badges (labextension/src/policyBadge.ts) speak the kernel's vocabulary: the
cases of labextension/test/policy_cases.json, which the extension's unit tests read too, are
what `policy_sources` and `cell_policy` find."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipy_agent.notebook.policy import cell_policy, policy_sources

CASES = json.loads((Path(__file__).resolve().parents[2] / "labextension/test/policy_cases.json").read_text())["cases"]
# Where policy.py says a policy is set, in the words the badge's explanation is chosen by.
SOURCES = {
    "its tag": "tag",
    "the notebook's policy for this cell": "cell_policies",
    "the notebook's policy for every cell": "policy",
}


def _source(where: str, tag: str) -> str:
    return SOURCES[where.removesuffix(f" {tag}")]


@pytest.mark.parametrize("case", CASES, ids=[json.dumps(c["tags"] or c["metadata"]) for c in CASES])
def test_the_kernel_finds_what_the_badges_show(case: dict[str, Any]) -> None:
    cell = {"id": case["id"], "tags": case["tags"]}
    found = policy_sources(cell, case["metadata"])
    assert [[tag, _source(where, tag)] for tag, where in found.items()] == case["found"]
    assert cell_policy(cell, case["metadata"]).timeout == case["timeout"]
