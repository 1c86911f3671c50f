"""The live-notebook protocol's types, generated from `protocol.json` by
`python -m ipy_agent.notebook.protocol_gen`: do not edit; change the schemas and run it.

A TypedDict (or a `Literal`) for each shared schema, message, and op's arguments and result;
`PageRequests` types `NotebookBridge.request`: each op's keyword arguments and its result.
TypedDicts are closed where the schema is; `Output` may carry other keys nbformat allows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import EllipsisType
from typing import Literal, NotRequired, TypedDict, overload

PROTOCOL_VERSION = 1
TARGET = "ipy_agent.notebook"

Op = Literal[
    "list_cells",
    "read_cells",
    "replace_source",
    "insert_cell",
    "delete_cell",
    "set_outputs",
    "scroll_to",
    "notify",
    "get_agent_metadata",
    "set_agent_metadata",
    "prompt_shown",
    "ask_permission",
    "withdraw_prompt",
    "stage_proposal",
    "resolve_proposal",
]
OPS: tuple[Op, ...] = (
    "list_cells",
    "read_cells",
    "replace_source",
    "insert_cell",
    "delete_cell",
    "set_outputs",
    "scroll_to",
    "notify",
    "get_agent_metadata",
    "set_agent_metadata",
    "prompt_shown",
    "ask_permission",
    "withdraw_prompt",
    "stage_proposal",
    "resolve_proposal",
)
ErrorCode = Literal["not_found", "stale", "bad_request", "unknown_op", "not_ready", "version_mismatch", "error"]
ERROR_CODES: tuple[ErrorCode, ...] = (
    "not_found",
    "stale",
    "bad_request",
    "unknown_op",
    "not_ready",
    "version_mismatch",
    "error",
)


class ReplyOk(TypedDict):
    protocol: int
    reply_to: str
    ok: Literal[True]
    result: dict[str, object]  # the op's result, as its schema under `ops` says


class ReplyError(TypedDict):
    protocol: int
    reply_to: str
    ok: Literal[False]
    code: ErrorCode
    error: str


CellType = Literal["code", "markdown", "raw"]
CELL_TYPES: tuple[CellType, ...] = ("code", "markdown", "raw")
NotifyType = Literal["default", "info", "success", "warning", "error", "in-progress"]
NOTIFY_TYPES: tuple[NotifyType, ...] = ("default", "info", "success", "warning", "error", "in-progress")
# What the person may answer to a staged proposal in the page.
Decision = Literal["accept", "reject", "accept_all", "reject_all", "stale"]
DECISIONS: tuple[Decision, ...] = ("accept", "reject", "accept_all", "reject_all", "stale")
# How a staged proposal ended, as `resolve_proposal` tells the page.
Outcome = Literal["accepted", "rejected", "stale", "cancelled"]
OUTCOMES: tuple[Outcome, ...] = ("accepted", "rejected", "stale", "cancelled")
ProposalKind = Literal["replace", "insert", "delete"]
PROPOSAL_KINDS: tuple[ProposalKind, ...] = ("replace", "insert", "delete")
# The answer to `ask_permission`: for questions allow is Answer and deny is Skip; the last two a review's.
Behavior = Literal["allow", "always", "deny", "accept_all", "reject_all"]
BEHAVIORS: tuple[Behavior, ...] = ("allow", "always", "deny", "accept_all", "reject_all")
PromptId = str
# the notebook's `ipy_agent` metadata: any JSON object ({} when it has none)
AgentMetadata = dict[str, object]


class MetadataResult(TypedDict):
    metadata: AgentMetadata


class PromptOption(TypedDict):
    label: str
    description: NotRequired[str]


class PromptQuestion(TypedDict):
    question: str
    header: NotRequired[str]
    options: list[PromptOption]
    multi_select: NotRequired[bool]


class Output(TypedDict):
    """One nbformat v4 output; other keys nbformat allows may come too."""

    output_type: str
    name: NotRequired[str]  # stream: stdout or stderr
    text: NotRequired[str | list[str]]  # stream: one string, or nbformat's lines
    data: NotRequired[dict[str, object]]  # display_data, execute_result: MIME type -> value
    metadata: NotRequired[dict[str, object]]
    execution_count: NotRequired[int | None]  # execute_result
    ename: NotRequired[str]  # error
    evalue: NotRequired[str]
    traceback: NotRequired[list[str]]


class OutputSummary(TypedDict):
    """An output as a cell listing tells it: its type, its size as JSON, and what it shows."""

    output_type: str
    size: int
    name: NotRequired[str]  # stream
    ename: NotRequired[str]  # error
    mime_types: NotRequired[list[str]]  # display_data, execute_result


class LiveCell(TypedDict):
    """A cell of the open notebook as the page tells it: the keys every cell in a result has."""

    id: str
    index: int  # its position, from 0
    cell_type: CellType
    source: str
    execution_count: int | None  # null for a cell that is not code
    output_count: int
    outputs_size: int  # the outputs' size as JSON, in characters
    tags: list[str]  # its string tags


class ListedCell(LiveCell):
    """A cell as listed: with a summary of its outputs."""

    output_summary: list[OutputSummary]


class ReadCell(LiveCell):
    """A cell as read: with its outputs."""

    outputs: list[Output]


class CellResult(TypedDict):
    cell: ListedCell  # the cell as it is now


class ConnectMessage(TypedDict):
    """The kernel opens a comm (its data), so that every panel says hello."""

    protocol: int
    event: Literal["connect"]
    path: str | None  # the notebook the kernel was started for, when known


class RequestMessage(TypedDict):
    """The kernel asks the panel showing `path` to do one op."""

    protocol: int
    request_id: str
    op: Op
    path: str
    args: dict[str, object]


# The panel's answer to one request: its result, or why there is none (then `result` is absent).
ReplyMessage = ReplyOk | ReplyError


class HelloMessage(TypedDict):
    """A panel says which notebook it shows, when a comm opens."""

    protocol: int
    event: Literal["hello"]
    path: str  # relative to the server's root
    server_root: str | None
    extension_version: str


class DecisionMessage(TypedDict):
    """The person answered a staged proposal in the page (unasked)."""

    protocol: int
    event: Literal["decision"]
    path: str
    proposal_id: str
    outcome: Decision
    reason: str  # typed with a rejection; empty otherwise


class ListCellsArgs(TypedDict):
    pass


class ListCellsResult(TypedDict):
    path: str
    dirty: bool  # the notebook has unsaved changes
    cells: list[ListedCell]


class ReadCellsArgs(TypedDict):
    cell_ids: NotRequired[list[str]]  # absent: every cell


class ReadCellsResult(TypedDict):
    path: str
    cells: list[ReadCell]


class ReplaceSourceArgs(TypedDict):
    cell_id: str
    source: str
    # absent: the cell's own; another type replaces the cell by one of that type with the same id
    cell_type: NotRequired[CellType]
    # refused with `stale` unless the cell holds this source; null or absent: no check
    expected_source: NotRequired[str | None]
    clear_outputs: NotRequired[bool]  # a code cell's outputs are cleared unless false


ReplaceSourceResult = CellResult


class InsertCellArgs(TypedDict):
    after_id: NotRequired[str | None]  # null or absent: the new cell comes first
    cell_type: NotRequired[CellType]  # absent: code
    source: str
    cell_id: NotRequired[str]  # the id to keep, for a cell put back; ignored when the notebook has it


InsertCellResult = CellResult


class DeleteCellArgs(TypedDict):
    cell_id: str
    expected_source: NotRequired[str | None]


class DeleteCellResult(TypedDict):
    cell: ListedCell  # the cell as it was
    cell_count: int


class SetOutputsArgs(TypedDict):
    cell_id: str
    outputs: list[Output]
    execution_count: NotRequired[int | None]  # absent: the count stays


SetOutputsResult = CellResult


class ScrollToArgs(TypedDict):
    cell_id: str


class ScrollToResult(TypedDict):
    index: int


class NotifyArgs(TypedDict):
    message: str
    type: NotRequired[NotifyType]  # absent or unknown: info
    auto_close: NotRequired[float]  # milliseconds; absent: 8000


class NotifyResult(TypedDict):
    notification_id: str


class GetAgentMetadataArgs(TypedDict):
    pass


GetAgentMetadataResult = MetadataResult


class SetAgentMetadataArgs(TypedDict):
    metadata: AgentMetadata  # {} removes the key


SetAgentMetadataResult = MetadataResult


class PromptShownArgs(TypedDict):
    prompt_id: PromptId
    wait_ms: NotRequired[float]  # how long the page looks (at most 30000); absent: 0


class PromptShownResult(TypedDict):
    shown: bool


class AskPermissionArgs(TypedDict):
    prompt_id: PromptId
    cell_id: NotRequired[str | None]  # the cell the buttons go under; null: the active one
    title: str
    detail: str
    rule: str
    review: NotRequired[bool]  # a cell edit under review: Accept / Reject
    always_label: NotRequired[str]
    questions: NotRequired[list[PromptQuestion]]  # AskUserQuestion's: answered instead of allowed or denied


class AskPermissionResult(TypedDict):
    behavior: Behavior
    message: str
    answers: dict[str, str] | None  # question -> answer, for questions; else null


class WithdrawPromptArgs(TypedDict):
    prompt_id: PromptId
    outcome: str


class WithdrawPromptResult(TypedDict):
    removed: bool


class StageProposalArgs(TypedDict):
    proposal_id: str
    kind: ProposalKind
    # the cell changed (needed but for an insert); for an insert the cell it goes after, null: the top
    cell_id: NotRequired[str | None]
    index: NotRequired[int]  # where the kernel saw it; the page finds the cell by its id
    source: NotRequired[str]  # proposed
    old_source: NotRequired[str]
    cell_type: NotRequired[CellType]
    label: NotRequired[str]  # the cell as a person names it
    scroll: NotRequired[bool]  # bring the first proposal into view unless false


class StageProposalResult(TypedDict):
    proposal_id: str
    index: int


class ResolveProposalArgs(TypedDict):
    proposal_id: str
    outcome: Outcome
    reason: NotRequired[str]


class ResolveProposalResult(TypedDict):
    proposal_id: str
    outcome: Outcome


class PageRequests(ABC):
    """Requests to the page, typed by the protocol: `request(op, timeout, **args)` takes the
    op's arguments as keywords and returns its result. A subclass sends them (`send_request`),
    and checks each reply against its schema before it returns it (the types rest on that).
    A timeout of `...` is the subclass's default; None waits as long as the page takes.
    """

    @overload
    async def request(
        self,
        op: Literal["list_cells"],
        timeout: float | None = ...,
    ) -> ListCellsResult: ...

    @overload
    async def request(
        self,
        op: Literal["read_cells"],
        timeout: float | None = ...,
        *,
        cell_ids: list[str] = ...,
    ) -> ReadCellsResult: ...

    @overload
    async def request(
        self,
        op: Literal["replace_source"],
        timeout: float | None = ...,
        *,
        cell_id: str,
        source: str,
        cell_type: CellType = ...,
        expected_source: str | None = ...,
        clear_outputs: bool = ...,
    ) -> ReplaceSourceResult: ...

    @overload
    async def request(
        self,
        op: Literal["insert_cell"],
        timeout: float | None = ...,
        *,
        after_id: str | None = ...,
        cell_type: CellType = ...,
        source: str,
        cell_id: str = ...,
    ) -> InsertCellResult: ...

    @overload
    async def request(
        self,
        op: Literal["delete_cell"],
        timeout: float | None = ...,
        *,
        cell_id: str,
        expected_source: str | None = ...,
    ) -> DeleteCellResult: ...

    @overload
    async def request(
        self,
        op: Literal["set_outputs"],
        timeout: float | None = ...,
        *,
        cell_id: str,
        outputs: list[Output],
        execution_count: int | None = ...,
    ) -> SetOutputsResult: ...

    @overload
    async def request(
        self,
        op: Literal["scroll_to"],
        timeout: float | None = ...,
        *,
        cell_id: str,
    ) -> ScrollToResult: ...

    @overload
    async def request(
        self,
        op: Literal["notify"],
        timeout: float | None = ...,
        *,
        message: str,
        type: NotifyType = ...,
        auto_close: float = ...,
    ) -> NotifyResult: ...

    @overload
    async def request(
        self,
        op: Literal["get_agent_metadata"],
        timeout: float | None = ...,
    ) -> GetAgentMetadataResult: ...

    @overload
    async def request(
        self,
        op: Literal["set_agent_metadata"],
        timeout: float | None = ...,
        *,
        metadata: AgentMetadata,
    ) -> SetAgentMetadataResult: ...

    @overload
    async def request(
        self,
        op: Literal["prompt_shown"],
        timeout: float | None = ...,
        *,
        prompt_id: PromptId,
        wait_ms: float = ...,
    ) -> PromptShownResult: ...

    @overload
    async def request(
        self,
        op: Literal["ask_permission"],
        timeout: float | None = ...,
        *,
        prompt_id: PromptId,
        cell_id: str | None = ...,
        title: str,
        detail: str,
        rule: str,
        review: bool = ...,
        always_label: str = ...,
        questions: list[PromptQuestion] = ...,
    ) -> AskPermissionResult: ...

    @overload
    async def request(
        self,
        op: Literal["withdraw_prompt"],
        timeout: float | None = ...,
        *,
        prompt_id: PromptId,
        outcome: str,
    ) -> WithdrawPromptResult: ...

    @overload
    async def request(
        self,
        op: Literal["stage_proposal"],
        timeout: float | None = ...,
        *,
        proposal_id: str,
        kind: ProposalKind,
        cell_id: str | None = ...,
        index: int = ...,
        source: str = ...,
        old_source: str = ...,
        cell_type: CellType = ...,
        label: str = ...,
        scroll: bool = ...,
    ) -> StageProposalResult: ...

    @overload
    async def request(
        self,
        op: Literal["resolve_proposal"],
        timeout: float | None = ...,
        *,
        proposal_id: str,
        outcome: Outcome,
        reason: str = ...,
    ) -> ResolveProposalResult: ...

    async def request(
        self,
        op: str,
        timeout: float | EllipsisType | None = ...,
        **args: object,
    ) -> Mapping[str, object]:
        return await self.send_request(op, args, timeout)

    @abstractmethod
    async def send_request(
        self,
        op: str,
        args: dict[str, object],
        timeout: float | EllipsisType | None,
    ) -> Mapping[str, object]:
        """Send one op to the page; its result, checked against the op's schema."""
