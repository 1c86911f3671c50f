"""Command hooks in Claude Code's settings format: shell commands the runtime runs at fixed points.

A settings file (or a plugin's `hooks/hooks.json`) may say

    {"hooks": {"PreToolUse": [{"matcher": "Edit|Write",
                               "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}

for the events PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, SessionStart and
Notification. Each command becomes a Python hook (contract/hooks.py) registered after the ones
given in code, so both kinds run in one order: the Python hooks first, then the command hooks,
file by file (the person's settings, `.ipy_agent/settings.json`, `.claude/settings.json`,
`.claude/settings.local.json`, then plugins, in the order given), and their answers combine like
any hooks' (deny > ask > allow).

The command gets the event as JSON on stdin (`hook_event_name`, `session_id`,
`transcript_path`, `cwd`, and as the event has them `tool_name`, `tool_input`,
`tool_response`, `prompt`, a Stop's `last_message` and `stop_hook_active` (a Stop hook already
sent the agent on in this run), a Notification's `message` and `notification_type`). It answers with its exit code and its output:

- exit 0: its stdout, when it is a JSON object, is read: `decision` ("block"/"deny" denies,
  "approve"/"allow" allows), `reason`, `continue: false` (with `stopReason`) stops the run,
  `hookSpecificOutput.permissionDecision` ("allow"/"deny"/"ask", with
  `permissionDecisionReason`) and `hookSpecificOutput.additionalContext`. Plain stdout of a
  UserPromptSubmit or SessionStart hook is added as context.
- exit 2: blocks (a tool call is denied, a prompt is refused, a Stop sends the agent on), with
  its stderr as the reason the model reads.
- any other exit: a failed hook, which fails closed like a Python hook that raises (the call it
  guards is blocked, and the error shown); so does a command that outlives its `timeout`
  (default 60 seconds), which is killed with everything it started.

A hook's allow is a PreToolUse hook's opinion, weighed by permissions/decide.py after deny and
ask rules, cell policies and the managed policy: it is never looser than they are.

A project file (anything but the person's own settings) arrives with a clone, and a command in
it runs as the person: its hooks run only once the person trusted exactly them (`HookTrust`),
keyed by the file's path and a fingerprint of its hooks and of the files in the project that
the commands name (a changed script asks again). Where the managed policy requires the sandbox,
each command runs in Bash's write-workdirs sandbox (tools/bash/contain.py: the working
directories writable but their protected surfaces, denied files masked, the seccomp filter and
the limits); where none can be made, command hooks do not run (fail closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shlex
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ipy_agent.base.json_store import FingerprintStore
from ipy_agent.base.paths import settings_dir
from ipy_agent.config.settings_approvals import yes_on_stdin
from ipy_agent.contract.decision import Behavior, CallDecision
from ipy_agent.contract.hooks import HookEvent, HookOutcome, Hooks
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import JsonObject
from ipy_agent.tools.bash.contain import contained_launch, finish_cgroup
from ipy_agent.tools.bash.process import Launch
from ipy_agent.tools.bash.sandbox import sandbox_usable

__all__ = [
    "COMMAND_HOOK_EVENTS",
    "CommandHook",
    "HookFile",
    "HookTrust",
    "ask_hooks_on_stdin",
    "install_command_hooks",
    "load_settings_hooks",
    "read_hooks_file",
]

COMMAND_HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "SessionStart",
    "Notification",
)
DEFAULT_TIMEOUT = 60.0
_OUTPUT_LIMIT = 10_000  # characters of a hook's stderr or context that reach the model

# Asked with (the file as the person knows it, the commands it would run); True trusts them.
ApproveHooks = Callable[[str, list[str]], bool]


@dataclass(frozen=True)
class CommandHook:
    event: str
    matcher: str | None
    command: str
    timeout: float
    source: str  # the file it came from, for messages


@dataclass(frozen=True)
class HookFile:
    """The command hooks of one file, whether they may run, and what was wrong with it."""

    path: Path
    hooks: tuple[CommandHook, ...] = ()
    trusted: bool = False
    problems: tuple[str, ...] = ()
    project: Path | None = None  # the folder whose files the commands' scripts are looked up in

    def fingerprint(self) -> str:
        """A hash of what the file's hooks run: events, matchers, commands, timeouts, and the
        content of each file in the project that a command names."""
        what: JsonObject = {
            "hooks": [[h.event, h.matcher, h.command, h.timeout] for h in self.hooks],
            "scripts": {p: _digest(Path(p)) for p in self.script_files()},
        }
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]

    def script_files(self) -> list[str]:
        root = self.project or self.path.parent
        found: list[str] = []
        for h in self.hooks:
            try:
                words = shlex.split(_expand(h.command, root, None))
            except ValueError:
                words = h.command.split()
            for word in words:
                candidate = Path(word) if os.path.isabs(word) else root / word
                if candidate.is_file() and str(candidate) not in found:
                    found.append(str(candidate))
        return sorted(found)


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def _expand(command: str, project: Path, plugin_root: Path | None) -> str:
    out = command.replace("${CLAUDE_PROJECT_DIR}", str(project)).replace("$CLAUDE_PROJECT_DIR", str(project))
    if plugin_root is not None:
        out = out.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin_root))
    return out


def read_hooks_file(
    path: str | Path, *, trusted: bool, project: str | Path | None = None, plugin_root: str | Path | None = None
) -> HookFile:
    """The command hooks of a settings file or a plugin's `hooks/hooks.json` (the same shape:
    `{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command", ...}]}]}}`).
    `trusted` says whether they may run; `plugin_root` expands `${CLAUDE_PLUGIN_ROOT}`. A broken
    file or entry is a problem listed on the result, never an exception."""
    p = Path(path)
    where = Path(project) if project is not None else p.parent
    root = Path(plugin_root) if plugin_root is not None else None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return HookFile(path=p, trusted=trusted, problems=(f"{p}: could not be read as JSON ({e})",), project=where)
    events = data.get("hooks") if isinstance(data, dict) else None
    if events is None:
        return HookFile(path=p, trusted=trusted, project=where)
    if not isinstance(events, dict):
        return HookFile(path=p, trusted=trusted, problems=(f'{p}: "hooks" must be an object',), project=where)
    found: list[CommandHook] = []
    problems: list[str] = []
    for event, groups in events.items():
        if event not in COMMAND_HOOK_EVENTS:
            problems.append(f"{p}: hooks.{event}: not an event we run ({', '.join(COMMAND_HOOK_EVENTS)}); skipped")
            continue
        if not isinstance(groups, list):
            problems.append(f"{p}: hooks.{event} must be a list; skipped")
            continue
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            matcher = group.get("matcher") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not (matcher is None or isinstance(matcher, str)):
                problems.append(f'{p}: hooks.{event}: each entry needs a "hooks" list and a string "matcher"')
                continue
            for entry in entries:
                if not isinstance(entry, dict) or entry.get("type") != "command":
                    problems.append(f'{p}: hooks.{event}: only {{"type": "command"}} hooks run here; skipped')
                    continue
                command, timeout = entry.get("command"), entry.get("timeout", DEFAULT_TIMEOUT)
                if not isinstance(command, str) or not command.strip():
                    problems.append(f"{p}: hooks.{event}: a hook without a command; skipped")
                    continue
                if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
                    problems.append(f"{p}: hooks.{event}: timeout must be a positive number of seconds; skipped")
                    continue
                command = _expand(command, where, root)
                found.append(CommandHook(event, matcher or None, command, float(timeout), str(p)))
    return HookFile(path=p, hooks=tuple(found), trusted=trusted, problems=tuple(problems), project=where)


class HookTrust:
    """Which project files' command hooks the person trusted, by fingerprint (a changed command
    or a changed script it runs asks again). Kept in the person's settings folder, a protected
    surface no command writes."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path or settings_dir() / "hook_trust.json"

    def is_trusted(self, file: HookFile) -> bool:
        return FingerprintStore(self.path, "files").holds(_key(file), file.fingerprint())

    def remember(self, file: HookFile) -> None:
        """Record the trust; an OSError (read-only home) is the caller's to report."""
        FingerprintStore(self.path, "files").keep(_key(file), file.fingerprint())


def _key(file: HookFile) -> str:
    return str(Path(os.path.abspath(file.path)))


PROJECT_FILES: tuple[str, ...] = (".ipy_agent/settings.json", ".claude/settings.json", ".claude/settings.local.json")


def load_settings_hooks(
    cwd: str | Path, *, approve: ApproveHooks | None = None, trust: HookTrust | None = None
) -> tuple[list[HookFile], list[str]]:
    """The command hooks of the person's settings (trusted) and of the project's settings files
    under `cwd` (trusted only as `trust` remembers, or when `approve` says yes, which is then
    remembered); a warning for each problem and each project file left untrusted."""
    trust = trust or HookTrust()
    base = Path(cwd)
    user = settings_dir() / "settings.json"
    out: list[HookFile] = []
    warnings: list[str] = []
    if user.is_file():
        out.append(read_hooks_file(user, trusted=True, project=base))
    for rel in PROJECT_FILES:
        path = base / rel
        if not path.is_file() or (user.is_file() and path.resolve() == user.resolve()):
            continue
        file = read_hooks_file(path, trusted=False, project=base)
        if file.hooks:
            if trust.is_trusted(file):
                file = _trusted(file)
            elif approve is not None and approve(str(path), [h.command for h in file.hooks]):
                try:
                    trust.remember(file)
                except OSError as e:
                    warnings.append(f"Could not remember your trust of {rel}'s hooks in {trust.path} ({e}).")
                file = _trusted(file)
            else:
                warnings.append(
                    f"{path}: its command hooks ({', '.join(h.command for h in file.hooks)}) do not run: they are "
                    "new or changed since you last trusted this file. Run %agent where it can ask you."
                )
        out.append(file)
    for f in out:
        warnings.extend(f.problems)
    return out, warnings


def ask_hooks_on_stdin(where: str, commands: list[str]) -> bool:
    """Ask the person whether a project file's command hooks may run; False where nobody can
    answer (no stdin: nbconvert, papermill, a test)."""
    print(f"{where} has command hooks you have not trusted:\n" + "".join(f"  {c}\n" for c in commands))
    return yes_on_stdin("Let them run as you (remembered until they or their scripts change)? [y/N] ")


def _trusted(file: HookFile) -> HookFile:
    return HookFile(path=file.path, hooks=file.hooks, trusted=True, problems=file.problems, project=file.project)


@dataclass
class _Context:
    cwd: Path
    session_id: Callable[[], str]
    transcript_path: Callable[[], str | None]
    sandbox: Callable[[], ToolContext | None]  # the context to sandbox a command in, or None


# The Python events a command hook's event runs on.
_PYTHON_EVENT = {"SessionStart": "SessionStart", "Notification": "Notification"}


def install_command_hooks(
    hooks: Hooks,
    files: Sequence[HookFile],
    *,
    cwd: str | Path,
    session_id: Callable[[], str] = lambda: "",
    transcript_path: Callable[[], str | None] = lambda: None,
    sandbox: Callable[[], ToolContext | None] = lambda: None,
) -> list[Callable[[HookEvent], object]]:
    """Register the trusted files' command hooks on `hooks`, after what is there; returns the
    registered callables (`hooks.remove` each to take them out). `sandbox` is asked before each
    command: a ToolContext (the agent's, when the policy requires the sandbox) runs it in Bash's
    write-workdirs sandbox with that context's masks and limits; where none can be made, the hook
    fails closed."""
    ctx = _Context(Path(cwd), session_id, transcript_path, sandbox)
    added: list[Callable[[HookEvent], object]] = []
    for file in files:
        if not file.trusted:
            continue
        for hook in file.hooks:
            fn = _make_hook(hook, ctx)
            hooks.add(_PYTHON_EVENT.get(hook.event, hook.event), fn, matcher=hook.matcher, command=True)
            added.append(fn)
    return added


def _make_hook(hook: CommandHook, ctx: _Context) -> Callable[[HookEvent], object]:
    async def command_hook(event: HookEvent) -> HookOutcome | None:
        payload = _payload(event, ctx)
        code, out, err = await _run(hook, ctx.cwd, payload, ctx.sandbox())
        return _outcome(hook, event.event, code, out, err)

    command_hook.__name__ = f"command hook {hook.command!r} ({hook.source})"
    return command_hook


def _payload(event: HookEvent, ctx: _Context) -> JsonObject:
    data: JsonObject = {
        "hook_event_name": event.event,
        "session_id": ctx.session_id(),
        "transcript_path": ctx.transcript_path(),
        "cwd": str(ctx.cwd),
    }
    if event.tool_name is not None:
        data["tool_name"] = event.tool_name
        data["tool_input"] = dict(event.input or {})
    if event.result is not None:
        content = event.result.get("content")
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        data["tool_response"] = content if isinstance(content, str) else json.dumps(content, default=str)
    if event.prompt is not None:
        data["prompt"] = event.prompt
    if event.last_message is not None:
        data["last_message"] = event.last_message
        data["stop_hook_active"] = event.stop_hook_active
    if event.agent_type is not None:
        data["agent_type"] = event.agent_type
    if event.notification_type is not None:
        data["message"] = event.message or ""
        data["notification_type"] = event.notification_type
    return data


async def _run(hook: CommandHook, cwd: Path, payload: JsonObject, sandbox: ToolContext | None) -> tuple[int, str, str]:
    if sandbox is None:
        return await _spawn(hook, cwd, payload, None)
    if not sandbox_usable(sandbox):
        raise RuntimeError(
            f"command hook {hook.command!r} did not run: the policy requires the sandbox, and none can be made here"
        )
    launch, cgroup = await contained_launch(hook.command, cwd, sandbox, CallDecision(source="hook"))
    try:
        return await _spawn(hook, cwd, payload, launch)
    finally:
        if launch is not None and launch.on_exit is not None:
            launch.on_exit()
        await asyncio.to_thread(finish_cgroup, cgroup)


async def _spawn(hook: CommandHook, cwd: Path, payload: JsonObject, launch: Launch | None) -> tuple[int, str, str]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(cwd)}
    argv = (
        [*launch.argv, "/bin/bash", "-c", launch.script_prefix + hook.command]
        if launch
        else ["/bin/sh", "-c", hook.command]
    )
    passed = launch.pass_fds if launch else ()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=env,
            start_new_session=True,  # its own process group: a timeout kills everything it started
            pass_fds=passed,
        )
    finally:
        for fd in passed:
            with contextlib.suppress(OSError):
                os.close(fd)
    try:
        out, err = await asyncio.wait_for(proc.communicate(json.dumps(payload).encode()), hook.timeout)
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        raise TimeoutError(f"command hook {hook.command!r} ran past its timeout of {hook.timeout:g}s") from None
    except asyncio.CancelledError:
        _kill(proc.pid)
        raise
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _outcome(hook: CommandHook, event: str, code: int, out: str, err: str) -> HookOutcome | None:
    if code == 2:
        blocked = err.strip()[:_OUTPUT_LIMIT] or f"blocked by the command hook {hook.command!r}"
        return HookOutcome(decision="deny", reason=blocked)
    if code != 0:
        raise RuntimeError(f"exit status {code}: {err.strip()[:_OUTPUT_LIMIT]}")
    text = out.strip()
    data: object = None
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
    if not isinstance(data, dict):
        if text and event in ("UserPromptSubmit", "SessionStart"):
            return HookOutcome(additional_context=text[:_OUTPUT_LIMIT])
        return None
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision: Behavior | None = None
    given = data.get("reason")
    reason: str | None = given if isinstance(given, str) else None
    said = specific.get("permissionDecision")
    if said == "allow" or said == "deny" or said == "ask":
        decision = said
        why = specific.get("permissionDecisionReason")
        reason = why if isinstance(why, str) and why else reason
    elif data.get("decision") in ("block", "deny"):
        decision = "deny"
    elif data.get("decision") in ("approve", "allow"):
        decision = "allow"
    elif data.get("decision") is not None:
        raise ValueError(f"unknown decision {data.get('decision')!r}")
    context = specific.get("additionalContext", data.get("additionalContext"))
    stop = data.get("continue") is False
    stop_reason = data.get("stopReason")
    if stop and isinstance(stop_reason, str):
        reason = stop_reason
    return HookOutcome(
        decision=decision,
        reason=(reason or "")[:_OUTPUT_LIMIT] or None,
        additional_context=context[:_OUTPUT_LIMIT] if isinstance(context, str) and context else None,
        stop=stop,
    )
