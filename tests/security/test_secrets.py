"""Credentials stay out: no process a tool starts sees them, and should one reach a result, it is
redacted before the model, the trace, the person's view or a saved conversation sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.base.secrets import is_secret_name, tool_environ
from ipy_agent.tools import builtin_tools
from tests.support.tools import write_tree
from tests.support.transcript import results_of, use

KEY = "sk-ant-api03-ipyagent-TEST-0123456789abcdefghijklmnop"
TOKEN = "ghp_ipyagentTESTtoken0123456789"


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-ipyagent-TEST-secret-value")
    monkeypatch.setenv("IPY_AGENT_HARMLESS", "visible-value-123")


def _agent(cwd: Path, turns: list, **kw) -> Agent:
    return Agent(model=ScriptedModel(turns), cwd=cwd, tools=builtin_tools(), **kw)


@pytest.mark.parametrize(
    "name,secret",
    [
        ("ANTHROPIC_API_KEY", True),
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("DB_PASSWORD", True),
        ("MY_SERVICE_SECRET", True),
        ("HF_TOKEN", True),
        ("GH_PAT", True),
        ("SUPABASE_JWT", True),
        ("JWT_SIGNING", True),
        ("DB_PASS", True),
        ("SMTP_PASSWD", True),
        ("GPG_PASSPHRASE", True),
        ("KEY_PASSPHRASE_FILE", True),
        ("SENTRY_DSN", True),
        ("DATABASE_URL", True),
        ("ANALYTICS_DATABASE_URL_RO", True),
        ("PATH", False),
        ("HOME", False),
        ("LANG", False),
        ("PYTHONPATH", False),
        ("VIRTUAL_ENV", False),
        ("TERM", False),
    ],
)
def test_names_that_look_like_credentials(name, secret):
    assert is_secret_name(name) is secret


def test_the_lists_are_configurable(monkeypatch):
    monkeypatch.setenv("IPY_AGENT_SECRET_ENV", "CORP_*, INTERNAL_URL")
    monkeypatch.setenv("IPY_AGENT_PASS_ENV", "GITHUB_TOKEN")
    assert is_secret_name("CORP_THING") and is_secret_name("internal_url")
    assert not is_secret_name("GITHUB_TOKEN")
    assert "GITHUB_TOKEN" in tool_environ()


@pytest.mark.parametrize("approved", [False, True], ids=["sandboxed", "approved"])
def test_bash_gets_no_credentials(tmp_path, approved):
    commands = [
        "env",
        "printenv ANTHROPIC_API_KEY",
        'echo "k=$ANTHROPIC_API_KEY t=$GITHUB_TOKEN"',
        "cat /proc/self/environ",
    ]
    turns = [[use("Bash", f"t{i}", command=c) for i, c in enumerate(commands)], "done"]
    agent = _agent(tmp_path, turns, **({"allow": ["Bash"]} if approved else {}))
    agent.run("show me the environment")
    results = results_of(agent.messages[2])
    everything = json.dumps(agent.messages)
    assert KEY not in everything and TOKEN not in everything and "aws-ipyagent" not in everything
    assert "visible-value-123" in results["t0"]["content"]  # the rest of the environment is there
    assert results["t1"].get("is_error")  # printenv: no such variable
    assert results["t2"]["content"] == "k= t="


def test_a_key_in_a_file_is_redacted_from_results_trace_detail_and_save(tmp_path):
    from ipy_agent.config.conversation_file import save_conversation

    write_tree(tmp_path, {"config.txt": f"key = {KEY}\n"})
    turns = [
        [
            use("Read", "r1", file_path="config.txt"),
            use("Bash", "b1", command="cat config.txt"),
            use("Grep", "g1", pattern="key", output_mode="content"),
        ],
        "done",
    ]
    agent = _agent(tmp_path, turns)
    agent.run(f"here is my key {KEY}, look at config.txt")
    results = results_of(agent.messages[2])
    for tid in ("r1", "b1", "g1"):
        assert KEY not in json.dumps(results[tid]) and "[redacted $ANTHROPIC_API_KEY]" in json.dumps(results[tid])
    for rec in agent.trace:
        assert KEY not in json.dumps(rec.result) and KEY not in (rec.detail or "")
    save_conversation(agent, tmp_path / "conv.json")
    text = (tmp_path / "conv.json").read_text()
    assert KEY not in text and "[redacted $ANTHROPIC_API_KEY]" in text


def test_a_credential_set_during_the_session_is_redacted_from_the_next_result(tmp_path, monkeypatch):
    # The secret list is cached between tool results; a variable the person sets later counts.
    write_tree(tmp_path, {"a.txt": "token = corp-late-7Qx9vR2mW4\n"})
    agent = _agent(
        tmp_path, [[use("Read", "r1", file_path="a.txt")], "one", [use("Read", "r2", file_path="a.txt")], "two"]
    )
    agent.run("read it")
    assert "corp-late-7Qx9vR2mW4" in json.dumps(results_of(agent.messages[2])["r1"])
    monkeypatch.setenv("CORP_DEPLOY_TOKEN", "corp-late-7Qx9vR2mW4")
    agent.run("again")
    second = json.dumps(results_of(agent.messages[-2])["r2"])
    assert "corp-late-7Qx9vR2mW4" not in second and "[redacted $CORP_DEPLOY_TOKEN]" in second


def test_urls_with_a_password_are_credentials_whatever_their_name(monkeypatch):
    from ipy_agent.base.secrets import is_secret, redact

    monkeypatch.setenv("HTTPS_PROXY", "http://alice:proxy-pass-123@proxy.corp:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp:3128")  # no credentials: the shell needs it
    monkeypatch.setenv("PIP_INDEX_URL", "https://bob:pip-secret-456@pypi.corp/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://pypi.org/simple")
    monkeypatch.setenv("REDIS_URL", "redis://:redis-pass-789@cache:6379/0")
    env = tool_environ()
    assert "HTTP_PROXY" in env and "PIP_EXTRA_INDEX_URL" in env
    assert not {"HTTPS_PROXY", "PIP_INDEX_URL", "REDIS_URL"} & set(env)
    assert is_secret("ANYTHING", "ftp://u:p@h") and not is_secret("ANYTHING", "https://example.com/a@b")
    text = redact("see https://carol:unknown-pw@git.corp/repo.git and proxy-pass-123 and https://example.com")
    assert "unknown-pw" not in text and "proxy-pass-123" not in text
    assert "https://[redacted credentials]@git.corp/repo.git" in text and "https://example.com" in text


def _encodings(secret: str) -> list[tuple[str, str]]:
    """(how, text) of a secret as programs print it, inside other text."""
    import base64

    data = secret.encode()
    out = [("plain", secret), ("reversed", secret[::-1]), ("hex", data.hex()), ("HEX", data.hex().upper())]
    for pad in range(6):  # every alignment twice, with other bytes before and after
        blob = b"k" * pad + b"=" + data + b"\n#tail"
        std = base64.b64encode(blob).decode()
        out += [(f"base64 +{pad}", std), (f"base64url +{pad}", base64.urlsafe_b64encode(blob).decode())]
        out.append((f"base64 wrapped at 76 +{pad}", "\n".join(std[i : i + 76] for i in range(0, len(std), 76))))
    hexed = (b"x" + data).hex()
    out.append(("hex wrapped at 60 (xxd -p)", "\r\n".join(hexed[i : i + 60] for i in range(0, len(hexed), 60))))
    return [(how, f"output line\n{text}\nmore output") for how, text in out]


def _recoverable(secret: str, text: str) -> bool:
    """Whether the secret can be read back from `text`: as any of its forms, line breaks or not,
    or by decoding what is left of a base64 run."""
    import base64
    import binascii
    import re

    from ipy_agent.base.secrets import encoded_forms

    flat = text.replace("\r", "").replace("\n", "")
    if any(form in text or form in flat for form, _ in encoded_forms(secret)):
        return True
    for run in re.findall(r"[A-Za-z0-9+/=_-]{12,}", flat):
        for alphabet in (run, run.replace("-", "+").replace("_", "/")):
            for cut in range(4):
                piece = alphabet[cut:]
                piece = piece[: len(piece) - len(piece) % 4]
                try:
                    if secret.encode() in base64.b64decode(piece):
                        return True
                except (binascii.Error, ValueError):
                    pass
    return False


def test_every_encoding_of_every_secret_is_redacted(monkeypatch, capsys):
    from ipy_agent.base.secrets import redact

    secrets = {
        "ANTHROPIC_API_KEY": KEY,
        "GITHUB_TOKEN": TOKEN,
        "AWS_SECRET_ACCESS_KEY": "aws-ipyagent-TEST-secret-value",
        "SHORT_TOKEN": "s3cr3t!!",  # the shortest value redacted: 8 characters
        "UNICODE_SECRET": "clé-sécrète-ünïcödé-42",
        "DATABASE_URL": "postgres://svc:db-pass-0987654321@db.internal:5432/app",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    tried = held = 0
    holes: list[str] = []
    for name, value in secrets.items():
        for how, text in _encodings(value):
            tried += 1
            out = redact(text)
            if not _recoverable(value, out) and "[redacted $" in out:
                held += 1
            else:
                holes.append(f"{name} {how}: {out[:120]!r}")
    with capsys.disabled():
        print(f"\n[encoded secrets] cases tried: {tried}; redacted: {held}")
        for hole in holes[:10]:
            print(f"  HOLE {hole}")
    assert held == tried


@pytest.mark.slow  # a corpus of real programs: --full runs it
def test_encoded_secrets_from_real_programs_are_redacted(tmp_path):
    write_tree(tmp_path, {"config.txt": f"api_key = {KEY}\ntoken = {TOKEN}\n"})
    commands = {
        "b64": "base64 config.txt",
        "b64w0": "base64 -w0 config.txt",
        "b64off": "printf 'xy' | cat - config.txt | base64",
        "url": "basenc --base64url config.txt",
        "hex": "xxd -p config.txt",
        "rev": "rev config.txt",
        "od": "od -c config.txt",
        "xxd": "xxd config.txt",
        "cut": "cut -c1-20 config.txt; echo; cut -c21-40 config.txt; echo; cut -c41- config.txt",
        "fold": "fold -w 7 config.txt",
        "b32": "base32 config.txt",
        "upper": "tr a-z A-Z < config.txt",
    }
    turns = [[use("Bash", tid, command=c) for tid, c in commands.items()], "done"]
    agent = _agent(tmp_path, turns, allow=["Bash"])
    agent.run("encode it")
    results = results_of(agent.messages[2])
    for tid in commands:
        content = results[tid]["content"]
        assert not results[tid].get("is_error"), content
        assert not _recoverable(KEY, content) and not _recoverable(TOKEN, content), (tid, content)
        assert "[redacted $ANTHROPIC_API_KEY" in content, (tid, content)


def test_what_mcp_servers_say_in_the_system_prompt_is_redacted(tmp_path):
    from ipy_agent.mcp.connection import ServerConnection
    from ipy_agent.mcp.manager import McpManager

    manager = McpManager(tmp_path, {"svc": {"type": "http", "url": "https://mcp.example.com/x"}})
    conn = ServerConnection(manager.configs["svc"], tmp_path)  # a server that went down, as sync leaves it
    conn.status = "down"
    conn.reason = f"could not reach https://user:not-in-env-pw@mcp.example.com/x (401 for key {KEY}, token {TOKEN})"
    manager._conns["svc"] = conn
    section = manager.prompt_section()
    assert TOKEN not in section and KEY not in section and "not-in-env-pw" not in section
    assert "https://[redacted credentials]@mcp.example.com" in section
    assert "[redacted $ANTHROPIC_API_KEY]" in section and "[redacted $GITHUB_TOKEN]" in section


# --- The secret fuzzer: real commands print a secret in the shell's usual ways ---------------

FILE_SECRET = "svc-7Hq2xPz9LmW4-kT8vN3bR6yQ"  # in secret.txt, and in the kernel as CORP_API_KEY
ENV_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY4d1Q"  # given to the process as SVC_DEPLOY_TOKEN


def _variants(secret: str) -> list[tuple[str, int]]:
    """(text, least) of the secret as a reader compares it (in lower case): as `rev` and `tr`
    may change it, and each of those in base64 at every alignment (a piece too short to decode
    alone); `least` is how many characters of it carry FRAGMENT characters of the secret."""
    import base64
    import codecs
    import math
    import string

    from tests.security.secret_corpus import FRAGMENT

    texts = [secret, secret[::-1], codecs.encode(secret, "rot13"), secret.upper(), secret.lower()]
    texts += ["".join(c for c in secret if not c.isdigit()), "".join(c for c in secret if c.isalnum())]
    texts += [secret.replace(c, "") for c in set(secret) if c in string.punctuation]
    out = [(text.lower(), FRAGMENT) for text in texts]
    for text in texts:
        data = text.encode()
        for pad in range(3):  # the characters that depend on the text alone, at each alignment
            encoded = base64.b64encode(b"\0" * pad + data).decode()
            out.append((encoded[-(-8 * pad // 6) : 8 * (pad + len(data)) // 6].lower(), math.ceil(FRAGMENT * 8 / 6)))
    return out


def _text(data: bytes) -> str:
    """Decoded bytes as a reader tries them: UTF-8, and byte by byte (latin-1)."""
    return data.decode("utf-8", "replace") + "\n" + data.decode("latin-1")


def _readings(out: str) -> list[str]:
    """What a reader gets back from `out` by the usual decodings, each also reversed and rot13:
    the text without whitespace and offsets, `od -c` / `od -b` tokens, hex (bytes and 16-bit
    words) and base64 / base32 runs. Written apart from the redaction, by brute force."""
    import base64
    import binascii
    import codecs
    import contextlib
    import re

    found: list[str] = []
    for text in (out, "\n".join(line[::-1] for line in out.splitlines()), out[::-1]):
        lines = [re.sub(r"^[0-9a-fA-F]{7,8}:?", "", line) for line in text.splitlines()]
        flat = "".join("".join(line.split()) for line in lines)
        # A dump's columns read down the page: hex before the gap (or the bars), text after it.
        columns = [[*re.split(r"  +\|?|\|", line.strip(), maxsplit=1), ""] for line in lines]
        hex_column = "".join("".join(c[0].split()) for c in columns)
        found += [flat, "".join(c[1].rstrip("|") for c in columns)]
        decoded = bytearray()
        for token in " ".join(lines).split():
            if re.fullmatch(r"[0-7]{3}", token):
                decoded.append(int(token, 8) % 256)
            elif len(token) == 2 and token[0] == "\\":
                decoded += {"n": b"\n", "t": b"\t", "0": b"\0", "\\": b"\\"}.get(token[1], b"?")
            else:
                decoded += token.encode()
        found.append(decoded.decode("utf-8", "replace"))
        for run in re.findall(r"[0-9a-fA-F]{16,}", flat + " " + hex_column):
            for start in (0, 1):
                data = bytes.fromhex(run[start : start + (len(run) - start) // 2 * 2])
                words = bytearray(data[: len(data) // 2 * 2])
                words[0::2], words[1::2] = data[1 : len(words) : 2], data[0 : len(words) : 2]
                found += [_text(bytes(b)) for b in (data, words, words[1:])]
        runs = re.findall(r"[A-Za-z0-9+/=_-]{12,}", "\n".join([flat, *lines]))  # joined, and line by line
        for run in runs:
            for start in range(8):
                for alphabet in (run, run.replace("-", "+").replace("_", "/")):
                    piece = alphabet[start:].rstrip("=")
                    with contextlib.suppress(binascii.Error, ValueError):
                        found.append(_text(base64.b64decode(piece[: len(piece) // 4 * 4])))
                    with contextlib.suppress(binascii.Error, ValueError):
                        found.append(_text(base64.b32decode(piece[: len(piece) // 8 * 8].upper())))
    return [r for text in found for r in (text.lower(), text[::-1].lower(), codecs.encode(text, "rot13").lower())]


def _leak(secret: str, out: str) -> str | None:
    """A piece of the secret, in a form a reader compares, long enough to carry FRAGMENT of its
    characters, that a reader gets back from `out`; None if there is none."""
    pieces = {v[i : i + least] for v, least in _variants(secret) for i in range(len(v) - least + 1)}
    for reading in _readings(out):
        if hit := next((p for p in pieces if p in reading), None):
            return hit
    return None


def _fuzz(tmp_path, monkeypatch) -> tuple[int, dict[str, list[str]]]:
    """Run every command of the corpus, redact its output as a tool result is, and return the
    number run and the leaks by family."""
    import os
    import subprocess

    from ipy_agent.base.secrets import redact_block
    from tests.security.secret_corpus import corpus

    monkeypatch.setenv("CORP_API_KEY", FILE_SECRET)
    monkeypatch.setenv("SVC_DEPLOY_TOKEN", ENV_SECRET)
    (tmp_path / "secret.txt").write_text(f"[service]\ntoken = {FILE_SECRET}\nregion = eu-west-1\n")
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "SVC_DEPLOY_TOKEN": ENV_SECRET}
    leaks: dict[str, list[str]] = {}
    cases = corpus()
    for case in cases:
        done = subprocess.run(
            ["bash", "-c", case.command], cwd=tmp_path, env=env, capture_output=True, timeout=30, check=False
        )
        assert done.returncode == 0, (case.command, done.stderr)
        out = done.stdout.decode("utf-8", "replace")
        shown = redact_block({"type": "tool_result", "tool_use_id": "t", "content": out})["content"]
        secret = ENV_SECRET if case.family.startswith("env") else FILE_SECRET
        assert _leak(secret, out), (case.command, out)  # the command really prints it
        if piece := _leak(secret, shown):
            leaks.setdefault(case.family, []).append(f"{piece!r} from {case.command}")
    return len(cases), leaks


@pytest.mark.slow  # a fuzzer of 352 real processes (minutes on a loaded machine): --full runs it
def test_secret_fuzzer_no_command_gets_a_secret_past_redaction(tmp_path, monkeypatch, capsys):
    ran, leaks = _fuzz(tmp_path, monkeypatch)
    with capsys.disabled():
        print(f"\n[secret fuzzer] commands run: {ran}; leaking a piece of 10+ characters: {len(leaks)} families")
        for family, found in list(leaks.items())[:10]:
            print(f"  LEAK {family}: {found[0][:160]}")
    assert not leaks


@pytest.mark.slow  # the fuzzer's control: --full runs it
def test_secret_fuzzer_control_the_exact_forms_alone_leak_the_new_layouts(tmp_path, monkeypatch, capsys):
    """The defence off: the forms the redaction had before (the value, reversed, hex, base64),
    each matched as it is, with no canonical view, no dump columns and no pieces."""
    import base64

    from ipy_agent.base import secret_search, secrets

    def old_forms(value: str) -> list[tuple[str, str]]:
        data = value.encode()
        forms = [(value, ""), (value[::-1], "reversed"), (data.hex(), "hex"), (data.hex().upper(), "hex")]
        for pad in range(3):
            encoded = base64.b64encode(b"\0" * pad + data).decode()
            forms.append((encoded[-(-8 * pad // 6) : 8 * (pad + len(data)) // 6], "base64"))
        return forms

    monkeypatch.setattr(secret_search, "secret_forms", old_forms)
    monkeypatch.setattr(secret_search, "canonical", lambda text: text.encode("utf-8", "surrogatepass"))
    monkeypatch.setattr(secret_search, "_dump_views", lambda text: [])
    monkeypatch.setattr(secret_search, "_SEPARATORS", secret_search._SPACE)  # no separated view
    monkeypatch.setattr(secret_search, "FRAGMENT", 10**9)  # whole forms only: no pieces
    monkeypatch.setattr(secret_search, "_LEAST", {})
    monkeypatch.setattr(secrets, "_last", None)  # the index is built again, without the defence
    ran, leaks = _fuzz(tmp_path, monkeypatch)
    with capsys.disabled():
        print(f"\n[secret fuzzer, control] commands run: {ran}; families leaking: {len(leaks)}")
    for family in (
        "file: od -c",
        "file: od -An -c",
        "file: od -b",
        "file: xxd",
        "file: hexdump -C",
        "file: od -x",
        "file: fold",
        "file: base32",
        "file: rot13 + as-is",
        "file: upper + as-is",
        "file: no-dash + as-is",
        "file: cut apart",
        "file: base64 cut apart",
        "env: od -c",
        "env: rev + xxd",
    ):
        assert family in leaks, (family, sorted(leaks))


def test_output_without_a_secret_is_left_as_it_is(tmp_path, monkeypatch):
    """Over-redaction: dumps, logs and listings that hold no secret come back unchanged, with
    the fuzzer's secrets (and the fixture's) in the environment."""
    import subprocess

    from ipy_agent.base.secrets import redact

    monkeypatch.setenv("CORP_API_KEY", FILE_SECRET)
    monkeypatch.setenv("SVC_DEPLOY_TOKEN", ENV_SECRET)
    (tmp_path / "data.txt").write_text("".join(f"row {i}: value={i * 37 % 1000} name=item_{i}\n" for i in range(300)))
    for command in (
        "od -c data.txt",
        "od -x data.txt",
        "xxd data.txt",
        "hexdump -C data.txt",
        "base32 data.txt",
        "fold -w 7 data.txt",
        "rev data.txt",
        "cut -c1-10 data.txt; cut -c11- data.txt",
        "seq 1 2000 | xxd -p",
        "printf 'a12406c Tests: one\n6618795 Sandbox limits test\nace8e9e Accept all\n'",
    ):
        out = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        assert redact(out) == out, command


@pytest.mark.parametrize("command", ["od -c", "od -An -c", "od -b", "od -x", "xxd", "xxd -p", "hexdump -C", "base32"])
def test_a_secret_with_accents_in_dumps_is_redacted(tmp_path, monkeypatch, command):
    """`od -c` prints each byte of a multi-byte character in octal: decoded back before looking."""
    import subprocess

    from ipy_agent.base.secrets import redact

    secret = "clé-sécrète-ünïcödé-42"
    monkeypatch.setenv("UNICODE_SECRET", secret)
    (tmp_path / "s.txt").write_text(f"u={secret}\n", encoding="utf-8")
    out = subprocess.run(
        ["bash", "-c", f"{command} s.txt"], cwd=tmp_path, capture_output=True, check=True, env={"LANG": "C"}
    ).stdout.decode()
    shown = redact(out)
    assert _leak(secret, out) and not _leak(secret, shown), (out, shown)
