"""Read deny rules hold whatever the spelling: two families.

- cwd at home: the working directory is HOME, which holds the usual credential stores (ssh,
  cloud, netrc, docker, kube, gcloud, git, pypi, gpg, Jupyter's connection files). With Read deny
  rules covering them, no command run in either sandbox reads a byte of them, whatever it names
  or walks (`grep -r .` from HOME, `tar` of HOME, a copy, a link, an interpreter).
- bypass-mode spellings: through the agent, in bypassPermissions (and with allow rules that
  match, in the other modes), a command that hides a denied file's name (a nested shell, a
  variable, a glob, `cd` then a relative path, an interpreter, find -exec, xargs, tar, a link)
  still does not read it. The static check denies the plain spellings; the masks hold for
  the rest, since in bypassPermissions "ask" means run.

A case holds when no secret token shows in the command's output and no file the command could
write holds one afterwards. Each family prints cases tried and held.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.tools import builtin_tools
from tests.helpers import results_of, use, write_tree
from tests.security.containment import DECIDERS, Family, bash, context

pytestmark = pytest.mark.usefixtures("need_bwrap")

TOKEN = f"TOKEN{uuid.uuid4().hex[:12]}"

CREDENTIAL_STORES = {
    ".ssh/id_ed25519": "ssh",
    ".ssh/config": "sshconfig",
    ".aws/credentials": "aws",
    ".netrc": "netrc",
    ".docker/config.json": "docker",
    ".kube/config": "kube",
    ".config/gcloud/credentials.db": "gcloud",
    ".git-credentials": "gitcred",
    ".pypirc": "pypirc",
    ".gnupg/private-keys-v1.d/k.key": "gpg",
    ".local/share/jupyter/runtime/kernel-1234.json": "jupyter",
    "other/.env": "dotenv",
}
# As Read deny rules say it (the built-in ones, once they exist, say the same).
HOME_RULES = (
    "~/.ssh/**",
    "~/.aws/**",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube/**",
    "~/.config/gcloud/**",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.gnupg/**",
    "~/.local/share/jupyter/runtime/**",
    "~/other/.env",
)

HOME_SPELLINGS = [
    "cat ~/.ssh/id_ed25519",
    "cat .ssh/id_ed25519 .aws/credentials .netrc",
    "cd .ssh && cat *",
    "cat $HOME/.aws/credentials",
    "f=.netrc; cat $f",
    "cat .doc*/config.json .kube/config",
    "grep -r TOKEN . 2>/dev/null",
    "grep -ra TOKEN .config .git-credentials .pypirc .gnupg 2>/dev/null",
    "find . -type f -exec cat {} + 2>/dev/null",
    "find . -name '*.json' -print0 | xargs -0 cat",
    "tar cf - . 2>/dev/null | strings",
    "cat .local/share/jupyter/runtime/*.json",
    "bash -c 'cat ~/.g*/private*/*'",
    "python3 -c \"import glob; [print(open(p, errors='replace').read()) for p in glob.glob('**/*', recursive=True, include_hidden=True) if __import__('os').path.isfile(p)]\"",
    "base64 .netrc | base64 -d",
    "cp .netrc /tmp/n && cat /tmp/n",
    "cat other/.env",
    "cd other && cat .e*",
]


def _leaks(text: str, roots: list[Path], originals: set[Path], secret: str = TOKEN) -> str:
    """Where a secret shows: in the output, or in a file that is not one of the originals."""
    if secret in text:
        return "in the output"
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                p = Path(dirpath, name)
                if p in originals or p.is_symlink():
                    continue
                try:
                    if secret.encode() in p.read_bytes():
                        return f"copied into {p}"
                except OSError:
                    continue
    return ""


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    h = write_tree(
        tmp_path / "home",
        {**{path: f"{label} {TOKEN}-{label}\n" for path, label in CREDENTIAL_STORES.items()}, "notes.txt": "hello\n"},
    )
    monkeypatch.setenv("HOME", str(h))
    return h


async def test_cwd_at_home_credential_stores_stay_masked_in_both_sandboxes(home):
    family = Family("cwd-at-home")
    originals = {home / p for p in CREDENTIAL_STORES}
    for decided_by in DECIDERS:
        for command in HOME_SPELLINGS:
            ctx = context(home, decided_by, read_deny=HOME_RULES)
            block = await bash(ctx, command)
            leak = _leaks(block["content"], [home], originals)
            family.record(f"{command} ({decided_by})", held=not leak, why=f"{leak}: {block['content'][:200]}")
    # What is not denied stays readable: the masks are not a blanket.
    for decided_by in DECIDERS:
        block = await bash(context(home, decided_by, read_deny=HOME_RULES), "cat notes.txt")
        assert block["content"] == "hello", block
    family.report()


async def test_without_the_rules_the_same_commands_do_read_them(home):
    """The control: the spellings do reach the files when no rule masks them."""
    for decided_by in DECIDERS:
        reached = 0
        for command in HOME_SPELLINGS:
            block = await bash(context(home, decided_by), command)
            reached += TOKEN in block["content"]
        assert reached >= len(HOME_SPELLINGS) - 2, f"only {reached} of {len(HOME_SPELLINGS)} spellings read a secret"


def test_agent_tools_warns_when_cwd_holds_home(home):
    from ipy_agent.ui.inspection import tools_text

    text = tools_text(Agent(ScriptedModel([]), cwd=home))
    assert text.count("holds your home directory") == 1
    assert "holds your home directory" not in tools_text(Agent(ScriptedModel([]), cwd=home / "other"))


# --- bypass-mode spellings, through the agent ---------------------------------------------------------

PROJECT_SECRET = f"S3CR3T-{TOKEN}"
BYPASS_RULES = ["Read(.env)", "Read(secrets/**)", "Read(~/.aws/**)"]
BYPASS_SPELLINGS = [
    "cat .env",
    "bash -c 'cat .e\"\"nv'",
    'sh -c "cat \\$(printf .en)v"',
    "F=.env; cat $F",
    "x=nv; cat .e$x",
    "cat .e*",
    "cat .[e]nv",
    "cat $(echo .env)",
    "eval 'cat .e''nv'",
    "cd secrets && cat *",
    "cd secrets; cat key.pem",
    "python3 -c \"print(open('.'+'env').read())\"",
    "node -e \"console.log(require('fs').readFileSync('.e'+'nv', 'utf8'))\"",
    "find . -name '.e*' -exec cat {} \\;",
    "grep -r S3CR3T . 2>/dev/null",
    "ls -A | xargs cat 2>/dev/null",
    "tar cf - . 2>/dev/null | tar xOf - ./.env",
    "cp .env copy.txt; cat copy.txt",
    "ln -sf .env l; cat l",
    "od -c .env | head",
    "while read -r l; do echo $l; done < .env",
    "awk 1 .e?v",
    "head -c 999 secrets/key.pem",
    "cat ~/.aws/credentials",
    "cat $HOME/.aws/cred*",
    "cd; cat .aws/credentials",
]


@pytest.fixture
def secret_project(tmp_path: Path, home: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {".env": f"API={PROJECT_SECRET}\n", "secrets/key.pem": f"KEY {PROJECT_SECRET}\n", "README.md": "hi\n"},
    )


def _run_agent(project: Path, commands: list[str], **kw) -> tuple[dict[str, dict], Agent]:
    turns = [*([use("Bash", f"t{i}", command=c)] for i, c in enumerate(commands)), "done"]
    agent = Agent(ScriptedModel(turns), cwd=project, tools=builtin_tools(), deny=BYPASS_RULES, **kw)
    agent.run("go")
    results: dict[str, dict] = {}
    for m in agent.messages:
        if m["role"] == "user" and isinstance(m["content"], list):
            results.update(results_of(m))
    return results, agent


@pytest.mark.parametrize(
    ("mode", "allow"),
    [
        ("bypassPermissions", []),
        ("acceptEdits", ["Bash"]),
        ("default", ["Bash"]),
    ],
    ids=["bypassPermissions", "acceptEdits+allow-all", "default+allow-all"],
)
def test_bypass_mode_spellings_do_not_read_a_denied_file(secret_project, home, mode, allow):
    (home / ".aws" / "credentials").write_text(f"aws {PROJECT_SECRET}\n")
    originals = {secret_project / ".env", secret_project / "secrets" / "key.pem", home / ".aws" / "credentials"}
    results, agent = _run_agent(secret_project, BYPASS_SPELLINGS, permission_mode=mode, allow=allow)
    family = Family(f"bypass-spellings/{mode}")
    how: dict[str, int] = {}
    for i, command in enumerate(BYPASS_SPELLINGS):
        block = results[f"t{i}"]
        rec = agent.trace[i]
        how[rec.decision.source] = how.get(rec.decision.source, 0) + 1
        leak = _leaks(block["content"], [secret_project, home], originals, PROJECT_SECRET)
        family.record(command, held=not leak, why=f"{leak} ({rec.decision.source}): {block['content'][:200]}")
    print(f"\n[bypass-spellings/{mode}] decided by: {how}")
    family.report()


def test_bypass_mode_spellings_control_without_rules(secret_project):
    """The control: without the deny rules the same calls do read the secret."""
    turns = [*([use("Bash", f"t{i}", command=c)] for i, c in enumerate(BYPASS_SPELLINGS[:12])), "done"]
    agent = Agent(ScriptedModel(turns), cwd=secret_project, tools=builtin_tools(), permission_mode="bypassPermissions")
    agent.run("go")
    read = sum(
        PROJECT_SECRET in b["content"]
        for m in agent.messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in results_of(m).values()
    )
    assert read >= 10, read
