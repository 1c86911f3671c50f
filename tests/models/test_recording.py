"""Record a real session (the Anthropic client against a local server), replay it offline, and
see a replay that no longer fits its recording stop and say where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.models.anthropic import AnthropicModel
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest
from tests.support.sse_server import ReplayServer, message_events
from tests.support.transcript import use

KEY_IN_TEXT = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
NOTES = "We agreed on teh plan.\nThe token is {token}.\n"


def world(root: Path, token: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.txt").write_text(NOTES.format(token=token))
    return root


class Person:
    """Answers every prompt the same way and remembers what it was asked."""

    def __init__(self, answer: str = "allow", reason: str = "") -> None:
        self.answer, self.reason, self.asked = answer, reason, []

    def __call__(self, request: PermissionRequest) -> PermissionAnswer:
        self.asked.append((request.tool_name, request.input))
        return PermissionAnswer(behavior=self.answer, message=self.reason)  # type: ignore[arg-type]


def calls(agent: Agent) -> list[tuple[str, dict[str, Any]]]:
    return [(r.tool_name, r.input) for r in agent.trace]


@pytest.fixture
def secret(monkeypatch) -> str:
    value = "tok-" + "9" * 24
    monkeypatch.setenv("NOTES_SERVICE_TOKEN", value)
    return value


@pytest.fixture
async def recorded(tmp_path, secret) -> dict[str, Any]:
    """A session recorded against the local Messages API: read, an approved edit, an answer."""
    path = tmp_path / "session.json"
    with ReplayServer() as server:
        server.add(
            message_events(
                [{"type": "text", "text": "Reading the notes."}, use("Read", "toolu_r", file_path="notes.txt")]
            ),
            message_events(
                [use("Edit", "toolu_e", file_path="notes.txt", old_string="teh plan", new_string="the plan")]
            ),
            message_events([{"type": "text", "text": f"Fixed the typo. (Never print keys like {KEY_IN_TEXT}.)"}]),
        )
        model = AnthropicModel("claude-test-model", api_key="sk-ant-test", base_url=server.url, max_retries=0)
        person = Person()
        agent = Agent(model=model, cwd=world(tmp_path / "recorded", secret), record=path, approver=person)
        result = await agent.arun("fix the typo in notes.txt")
        await model.aclose()
    assert result.stop_reason == "end_turn", result.error
    return {"path": path, "agent": agent, "result": result, "asked": person.asked}


async def test_a_recorded_session_replays_offline_with_the_same_calls_prompts_and_answer(recorded, tmp_path, secret):
    path: Path = recorded["path"]
    data = json.loads(path.read_text())
    assert data["provenance"]["kind"] == "recorded" and data["provenance"]["model"] == "anthropic:claude-test-model"
    first, second, third = data["turns"]
    assert first["stop_reason"] == "tool_use" and first["usage"]["input_tokens"] == 10 and len(first["timing"]) == 2
    assert first["request"] == "fix the typo in notes.txt"
    assert second["expect"][0]["name"] == "Read" and "teh plan" in second["expect"][0]["result"]
    assert list(third) == ["when"] and list(third["when"]) == ["allowed"], (
        "the reply after the person's answer branches on it"
    )

    person = Person()
    replay = Agent(model=ScriptedModel.from_file(path), cwd=world(tmp_path / "replayed", secret), approver=person)
    result = await replay.arun("fix the typo in notes.txt")

    assert result.text == recorded["result"].text.replace(KEY_IN_TEXT, "[redacted key]")
    assert calls(replay) == calls(recorded["agent"])
    assert person.asked == recorded["asked"] and [name for name, _ in person.asked] == ["Edit"]
    assert (tmp_path / "replayed" / "notes.txt").read_text().startswith("We agreed on the plan.")


async def test_the_transcript_holds_no_secret(recorded, secret):
    text = recorded["path"].read_text()
    assert secret not in text and KEY_IN_TEXT not in text and "sk-ant-test" not in text
    assert "[redacted $NOTES_SERVICE_TOKEN]" in text and "[redacted key]" in text
    assert str(recorded["agent"].cwd) not in text, "the run's directory is a placeholder"


async def test_a_replay_whose_tool_result_differs_stops_with_a_diff(recorded, tmp_path, secret):
    changed = world(tmp_path / "changed", secret)
    (changed / "notes.txt").write_text("We agreed on teh plan, and on the budget.\n")
    replay = Agent(model=ScriptedModel.from_file(recorded["path"]), cwd=changed, approver=Person())

    result = await replay.arun("fix the typo in notes.txt")

    assert (result.stop_reason, result.error_kind) == ("error", "replay_diverged")
    message = result.error or ""
    assert "Reply 2 of the transcript" in message and "the result of Read" in message
    assert "--- recorded" in message and "+++ this run" in message
    assert "-     1\tWe agreed on teh plan." in message or "We agreed on teh plan, and on the budget." in message
    assert [name for name, _ in calls(replay)] == ["Read"], "nothing ran after the point where it diverged"


async def test_a_different_answer_from_the_person_stops_the_replay(recorded, tmp_path, secret):
    replay = Agent(
        model=ScriptedModel.from_file(recorded["path"]),
        cwd=world(tmp_path / "denied", secret),
        approver=Person("deny", "not now"),
    )

    result = await replay.arun("fix the typo in notes.txt")

    assert result.error_kind == "replay_diverged"
    assert "only when the previous calls were allowed" in (result.error or "")
    assert "Edit denied (not now)" in (result.error or "")


async def test_a_hand_written_branch_follows_the_persons_answer(tmp_path):
    edit = [use("Edit", "toolu_e", file_path="notes.txt", old_string="teh", new_string="the")]
    turns = [
        [use("Read", "toolu_r", file_path="notes.txt")],
        edit,
        {"when": {"allowed": ["Done: fixed."], "denied": ["Left it as it is.", "(never reached in this test)"]}},
    ]
    for answer, text in (("allow", "Done: fixed."), ("deny", "Left it as it is.")):
        (tmp_path / answer).mkdir()
        (tmp_path / answer / "notes.txt").write_text("teh plan\n")
        agent = Agent(model=ScriptedModel(turns), cwd=tmp_path / answer, approver=Person(answer))
        assert (await agent.arun("fix it")).text == text


def test_a_bad_branch_is_refused_where_it_is(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"turns": ["ok", {"when": {"approved": ["x"]}}]}))
    with pytest.raises(ValueError, match=r"turn 1: a branch is chosen by allowed, denied, error, not 'approved'"):
        ScriptedModel.from_file(path)
    path.write_text(json.dumps({"turns": [{"reply": "x", "cost": 3}]}))
    with pytest.raises(ValueError, match="a reply has no field 'cost'"):
        ScriptedModel.from_file(path)


def test_every_shipped_transcript_says_where_it_came_from():
    root = Path(__file__).resolve().parents[2] / "examples" / "transcripts"
    for path in sorted(root.glob("*.json")):
        provenance = json.loads(path.read_text())["provenance"]
        assert provenance["kind"] in ("hand-written", "recorded"), path.name
        if provenance["kind"] == "recorded":
            assert provenance["model"] and provenance["date"], path.name
        ScriptedModel.from_file(path)
