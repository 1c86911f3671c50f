"""The Bash permission check on a 10 KB command, with Read deny rules and without.

A Read deny rule makes Bash look at every word that could name a file (the deny rule must hold
whatever the command spells), so its cost grows with the command. The command here asks for
approval (it writes), and the approver denies it, so nothing runs: the time is the lifecycle
around one call, dominated by classifying the command and checking it against the rules.
"""

from __future__ import annotations

import asyncio
import tempfile
import time

from ipy_agent import Agent, ScriptedModel
from ipy_agent.tools import builtin_tools

__all__ = ["COMMAND", "check_seconds", "deny_check_seconds", "parse_seconds"]

_parts = [f"touch build/out_{i:04d}.txt src/mod_{i:04d}.py" for i in range(250)]
COMMAND = " && ".join(_parts)[:10_240]
COMMAND = COMMAND[: COMMAND.rfind(" && ")]  # end on a whole part
CWD = tempfile.mkdtemp(prefix="ipy-agent-bench-")
BASH = [t for t in builtin_tools() if t.name == "Bash"]


_FRESH = iter(range(10**9))


def fresh_command() -> str:
    """COMMAND with a last part no earlier call had: the parse is not cached."""
    return f"{COMMAND} && touch build/fresh_{next(_FRESH):09d}.txt"


def check_seconds(with_deny_rules: bool, calls: int = 5, *, fresh: bool = False) -> float:
    """Seconds per Bash call that is classified, checked against the rules, asked and denied;
    `fresh`: each call a command never parsed before."""
    turns = [
        [
            {
                "type": "tool_use",
                "id": f"b{i}",
                "name": "Bash",
                "input": {"command": fresh_command() if fresh else COMMAND},
            }
        ]
        for i in range(calls)
    ]
    deny = ["Read(**/.env)", "Read(secrets/**)"] if with_deny_rules else []
    agent = Agent(
        model=ScriptedModel([*turns, "done"]),
        tools=BASH,
        cwd=CWD,
        system_prompt="bench",
        deny=deny,
        approver=lambda request: "deny",
        max_turns=calls + 5,
    )
    start = time.perf_counter()
    asyncio.run(agent.arun("go"))
    elapsed = time.perf_counter() - start
    statuses = {rec.status for rec in agent.trace}
    assert statuses == {"denied"}, statuses
    return elapsed / calls


def deny_check_seconds(reps: int = 30) -> tuple[float, int]:
    """(median seconds of the Read-deny check alone on COMMAND, the words it resolves): the part
    of the call that deny rules add, measured outside the lifecycle."""
    import statistics

    from ipy_agent.contract.read_state import ReadState
    from ipy_agent.contract.tool_context import ToolContext
    from ipy_agent.tools.bash.deny import denied_read

    ctx = ToolContext(cwd=CWD, read_state=ReadState(), read_deny=("**/.env", "secrets/**"))
    denied_read(COMMAND, CWD, ctx)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        denied_read(COMMAND, CWD, ctx)
        times.append(time.perf_counter() - start)
    return statistics.median(times), 2 * (COMMAND.count(" && ") + 1)  # two file names per `touch`


def parse_seconds(reps: int = 5) -> float:
    """Median seconds to parse a fresh COMMAND once (the parser's cache bypassed)."""
    import statistics

    from ipy_agent.tools.bash.syntax import analyze

    parse = analyze.__wrapped__
    times = []
    for _ in range(reps):
        command = fresh_command()
        start = time.perf_counter()
        parse(command)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
