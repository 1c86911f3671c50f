"""Which model runs, and that the person can see it: `--model PROVIDER:NAME`, `--model ?`,
`AgentMagics.model` and `.providers`, `--record`, and the provider and model in `%agent_tools`
and the usage line."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError

from ipy_agent.models.openai import OpenAIModel
from ipy_agent.models.recording import RecordingModel


def test_model_question_mark_lists_the_providers_and_runs_nothing(shell, magics, capsys):
    shell.run_line_magic("config", 'AgentMagics.providers = {"ollama": {"base_url": "http://gpu:11434/v1"}}')
    shell.run_line_magic("agent", "--model ?")
    out = capsys.readouterr().out
    assert "Providers (--model PROVIDER:MODEL" in out and "ollama:llama3.2" in out and "bedrock:" in out
    assert "Ollama at http://gpu:11434/v1" in out
    assert magics.session.agent is None


def test_a_provider_name_and_its_configured_options_make_the_model(shell, magics, capsys):
    shell.run_line_magic("config", 'AgentMagics.model = "ollama:llama3.2"')
    shell.run_line_magic("config", 'AgentMagics.providers = {"ollama": {"context_window": 8192}}')
    shell.run_line_magic("agent_tools", "")
    out = capsys.readouterr().out
    model = magics.session.configured_agent().model
    assert isinstance(model, OpenAIModel) and model.context_window == 8192
    assert out.startswith("Model: ollama:llama3.2 on an OpenAI-compatible server at http://127.0.0.1:11434/v1")
    with pytest.raises(UsageError, match="needs a model name"):
        shell.run_line_magic("agent", "--model ollama: hello")


def test_record_writes_the_conversation_and_the_usage_line_names_the_model(shell, magics, script, tmp_path, capsys):
    path = script("Hello there.", "Still here.")
    out_file = tmp_path / "recorded.json"
    shell.run_line_magic("agent", f"--no-widgets --record {out_file} --script {path} say hello")
    shell.run_line_magic("agent", f"--no-widgets --script {path} and again")
    text = capsys.readouterr().out
    assert isinstance(magics.session.agent.model, RecordingModel)
    data = json.loads(out_file.read_text())
    assert data["provenance"]["how"] == f"%agent --record {out_file}"
    assert [t["reply"] for t in data["turns"]] == [
        [{"type": "text", "text": "Hello there."}],
        [{"type": "text", "text": "Hello there."}],
    ]
    assert f"scripted:{path.rsplit('/', 1)[-1]}" in text, "the usage line names the model"
