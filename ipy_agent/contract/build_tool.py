"""`build_tool()`: a tool assembled from a pydantic input model and plain functions.

Most custom tools need no subclass of `Tool`: a name, an input model, a description and a
function, with safety flags that are bools or functions of the parsed input. Every member left
out keeps the contract's fail-closed default (not read-only, not concurrency-safe). A sync
function runs in a worker thread so the kernel's event loop keeps serving widgets.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast

from pydantic import BaseModel

from ipy_agent.base.threads import run_blocking
from ipy_agent.history.blocks import ToolResultBlock

from .decision import CHECK_BEHAVIORS, UNDECIDED, CallDecision, CheckBehavior
from .limits import TOOL_RESULT_CHARS
from .tool import Flag, InputT, PermissionCheck, ResultT, RuleSubject, Tool, ToolKind, maybe_await
from .tool_context import ToolContext

__all__ = ["build_tool"]

_CHECK_BEHAVIORS: dict[str, CheckBehavior] = {b: b for b in CHECK_BEHAVIORS}


def _flag(value: Flag, name: str) -> Callable[[Any], bool]:
    if callable(value):
        return value
    if isinstance(value, bool):
        return functools.partial(_constant, value)
    raise TypeError(f"{name} must be a bool or a function of the parsed input, not {value!r}")


def _constant(value: bool, _arg: Any) -> bool:
    return value


class _BuiltTool(Tool[InputT, ResultT]):
    """A tool assembled from plain functions by `build_tool()`."""

    def __init__(self, **spec: Any) -> None:
        self.name = spec["name"]
        self.input_model = spec["input_model"]
        self._description = spec["description"]
        self._call: Callable[[InputT, ToolContext], ResultT | Awaitable[ResultT]] = spec["call"]
        self._flags = {
            key: _flag(spec[key], key)
            for key in ("is_read_only", "is_concurrency_safe", "is_destructive", "cancels_siblings_on_error")
        }
        enabled = spec["is_enabled"]
        self._is_enabled: Callable[[Any], bool] = (
            enabled if callable(enabled) else functools.partial(_constant, bool(enabled))
        )
        self.max_result_chars = spec["max_result_chars"]
        self.rule_names = tuple(spec["rule_names"] or ())
        self.kind = spec["kind"]
        self.user_facing_name = spec["user_facing_name"] or ""
        self.offered_in_simple_mode = bool(spec["offered_in_simple_mode"])
        self._validate = spec["validate_input"]
        self._check = spec["check_permissions"]
        self._map = spec["map_result"]
        self._sum_use = spec["summarize_use"]
        self._sum_result = spec["summarize_result"]
        self._rule_subject = spec["rule_subject"]

    # The base class turns an exception in any of these into the unsafe answer.
    def _read_only(self, inp: InputT) -> bool:
        return self._flags["is_read_only"](inp)

    def _concurrency_safe(self, inp: InputT) -> bool:
        return self._flags["is_concurrency_safe"](inp)

    def _destructive(self, inp: InputT) -> bool:
        return self._flags["is_destructive"](inp)

    def _enabled(self, ctx: ToolContext) -> bool:
        return self._is_enabled(ctx)

    def description(self, ctx: ToolContext) -> str:
        d = self._description
        return d(ctx) if callable(d) else str(d)

    async def validate_input(self, inp: InputT, ctx: ToolContext) -> str | None:
        if self._validate is None:
            return None
        message = await maybe_await(self._validate(inp, ctx))
        return None if message is None else str(message)

    async def check_permissions(self, inp: InputT, ctx: ToolContext) -> PermissionCheck:
        if self._check is None:
            return PermissionCheck()
        answer = await maybe_await(self._check(inp, ctx))
        if answer is None:
            return PermissionCheck()
        if isinstance(answer, str):
            # A word that is no behaviour gives no opinion, as a check that said nothing.
            return PermissionCheck(behavior=_CHECK_BEHAVIORS.get(answer, "passthrough"))
        if not isinstance(answer, PermissionCheck):
            raise TypeError(
                f"check_permissions of {self.name!r} must return a PermissionCheck or a behavior, not {answer!r}"
            )
        return answer

    def rule_subject(self, inp: InputT, ctx: ToolContext) -> RuleSubject | None:
        return self._rule_subject(inp, ctx) if self._rule_subject else None

    def cancels_siblings_on_error(self, inp: InputT) -> bool:
        try:
            return bool(self._flags["cancels_siblings_on_error"](inp))
        except Exception:
            return False

    async def call(self, inp: InputT, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> ResultT:
        fn = self._call
        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):
            result = fn(inp, ctx)
        else:
            # Sync tools run in a worker thread so the kernel's event loop keeps serving widgets.
            result = await run_blocking(fn, inp, ctx)
        # What the developer's function gave (awaited when it is awaitable), as `call` promised.
        return cast(ResultT, await maybe_await(result))

    def map_result(self, output: ResultT, tool_use_id: str) -> ToolResultBlock:
        if self._map is None:
            return super().map_result(output, tool_use_id)
        mapped = self._map(output, tool_use_id)
        if isinstance(mapped, dict) and mapped.get("type") == "tool_result":
            # The developer's own block, taken as they built it (a function we cannot type).
            return cast(ToolResultBlock, mapped)
        return super().map_result(mapped, tool_use_id)

    def summarize_use(self, inp: InputT) -> str:
        return self._sum_use(inp) if self._sum_use else super().summarize_use(inp)

    def summarize_result(self, output: ResultT) -> str:
        return self._sum_result(output) if self._sum_result else super().summarize_result(output)


def build_tool(
    *,
    name: str,
    input_model: type[InputT],
    description: str | Callable[[ToolContext], str],
    call: Callable[[InputT, ToolContext], ResultT | Awaitable[ResultT]],
    is_read_only: bool | Callable[[InputT], bool] = False,
    is_concurrency_safe: bool | Callable[[InputT], bool] = False,
    is_destructive: bool | Callable[[InputT], bool] = False,
    is_enabled: bool | Callable[[ToolContext], bool] = True,
    cancels_siblings_on_error: bool | Callable[[InputT], bool] = False,
    validate_input: Callable[[InputT, ToolContext], str | Awaitable[str | None] | None] | None = None,
    check_permissions: Callable[[InputT, ToolContext], Any] | None = None,
    map_result: Callable[[ResultT, str], Any] | None = None,
    summarize_use: Callable[[InputT], str] | None = None,
    summarize_result: Callable[[ResultT], str] | None = None,
    rule_subject: Callable[[InputT, ToolContext], RuleSubject | None] | None = None,
    max_result_chars: int = TOOL_RESULT_CHARS,
    rule_names: tuple[str, ...] | None = None,
    kind: ToolKind = "other",
    user_facing_name: str | None = None,
    offered_in_simple_mode: bool = False,
) -> Tool[InputT, ResultT]:
    """Make a tool from a pydantic input model and a function. Defaults fail closed.

    Each safety flag is a bool or a function of the parsed input. `cancels_siblings_on_error`
    (default False) makes a failure of this call cancel the calls after it in the same message,
    for steps that later calls probably depend on. `call` may be sync (it then
    runs in a thread) or async, and returns the tool's natural data; `map_result` turns that
    into what the model reads, `summarize_use` / `summarize_result` into what the person reads.
    `offered_in_simple_mode` keeps the tool in `Agent(simple=True)`, which offers few tools.
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"tool name {name!r} must be letters, digits, '_' or '-'")
    if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
        raise TypeError(f"input_model for {name!r} must be a pydantic BaseModel subclass, not {input_model!r}")
    if not callable(call):
        raise TypeError(f"call for {name!r} must be a function (input, ctx) -> data")
    if max_result_chars <= 0:
        raise ValueError(f"max_result_chars for {name!r} must be positive, not {max_result_chars!r}")
    return _BuiltTool[InputT, ResultT](
        name=name,
        input_model=input_model,
        description=description,
        call=call,
        is_read_only=is_read_only,
        is_concurrency_safe=is_concurrency_safe,
        is_destructive=is_destructive,
        is_enabled=is_enabled,
        cancels_siblings_on_error=cancels_siblings_on_error,
        validate_input=validate_input,
        check_permissions=check_permissions,
        map_result=map_result,
        summarize_use=summarize_use,
        summarize_result=summarize_result,
        rule_subject=rule_subject,
        max_result_chars=max_result_chars,
        rule_names=rule_names,
        kind=kind,
        user_facing_name=user_facing_name,
        offered_in_simple_mode=offered_in_simple_mode,
    )
