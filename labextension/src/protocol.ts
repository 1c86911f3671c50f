/**
 * The live-notebook protocol's types, generated from ipy_agent/notebook/protocol.json by
 * `python -m ipy_agent.notebook.protocol_gen`: do not edit; change the schemas and run it.
 *
 * A type for each shared schema, message, and op's arguments and result; `OpArgs` and
 * `OpResults` map each op to its own.
 */

export const PROTOCOL = 1;
export const TARGET = 'ipy_agent.notebook';

export type Op =
  | 'list_cells'
  | 'read_cells'
  | 'replace_source'
  | 'insert_cell'
  | 'delete_cell'
  | 'set_outputs'
  | 'scroll_to'
  | 'notify'
  | 'get_agent_metadata'
  | 'set_agent_metadata'
  | 'prompt_shown'
  | 'ask_permission'
  | 'withdraw_prompt'
  | 'stage_proposal'
  | 'resolve_proposal';
export const OPS: readonly Op[] = [
  'list_cells',
  'read_cells',
  'replace_source',
  'insert_cell',
  'delete_cell',
  'set_outputs',
  'scroll_to',
  'notify',
  'get_agent_metadata',
  'set_agent_metadata',
  'prompt_shown',
  'ask_permission',
  'withdraw_prompt',
  'stage_proposal',
  'resolve_proposal'
];

export type ErrorCode =
  'not_found' | 'stale' | 'bad_request' | 'unknown_op' | 'not_ready' | 'version_mismatch' | 'error';
export const ERROR_CODES: readonly ErrorCode[] = [
  'not_found',
  'stale',
  'bad_request',
  'unknown_op',
  'not_ready',
  'version_mismatch',
  'error'
];

export type ReplyOk = {
  protocol: number;
  reply_to: string;
  ok: true;
  /** the op's result, as its schema under `ops` says */
  result: { [key: string]: unknown };
};

export type ReplyError = {
  protocol: number;
  reply_to: string;
  ok: false;
  code: ErrorCode;
  error: string;
};

export type CellType = 'code' | 'markdown' | 'raw';
export const CELL_TYPES: readonly CellType[] = ['code', 'markdown', 'raw'];

export type NotifyType = 'default' | 'info' | 'success' | 'warning' | 'error' | 'in-progress';
export const NOTIFY_TYPES: readonly NotifyType[] = ['default', 'info', 'success', 'warning', 'error', 'in-progress'];

/** What the person may answer to a staged proposal in the page. */
export type Decision = 'accept' | 'reject' | 'accept_all' | 'reject_all' | 'stale';
export const DECISIONS: readonly Decision[] = ['accept', 'reject', 'accept_all', 'reject_all', 'stale'];

/** How a staged proposal ended, as `resolve_proposal` tells the page. */
export type Outcome = 'accepted' | 'rejected' | 'stale' | 'cancelled';
export const OUTCOMES: readonly Outcome[] = ['accepted', 'rejected', 'stale', 'cancelled'];

export type ProposalKind = 'replace' | 'insert' | 'delete';
export const PROPOSAL_KINDS: readonly ProposalKind[] = ['replace', 'insert', 'delete'];

/** The answer to `ask_permission`: for questions allow is Answer and deny is Skip; the last two a review's. */
export type Behavior = 'allow' | 'always' | 'deny' | 'accept_all' | 'reject_all';
export const BEHAVIORS: readonly Behavior[] = ['allow', 'always', 'deny', 'accept_all', 'reject_all'];

export type PromptId = string;

/** the notebook's `ipy_agent` metadata: any JSON object ({} when it has none) */
export type AgentMetadata = { [key: string]: unknown };

export type MetadataResult = {
  metadata: AgentMetadata;
};

export type PromptOption = {
  label: string;
  description?: string;
};

export type PromptQuestion = {
  question: string;
  header?: string;
  options: PromptOption[];
  multi_select?: boolean;
};

/** One nbformat v4 output; other keys nbformat allows may come too. */
export type Output = {
  output_type: string;
  /** stream: stdout or stderr */
  name?: string;
  /** stream: one string, or nbformat's lines */
  text?: string | string[];
  /** display_data, execute_result: MIME type -> value */
  data?: { [key: string]: unknown };
  metadata?: { [key: string]: unknown };
  /** execute_result */
  execution_count?: number | null;
  /** error */
  ename?: string;
  evalue?: string;
  traceback?: string[];
  [key: string]: unknown;
};

/** An output as a cell listing tells it: its type, its size as JSON, and what it shows. */
export type OutputSummary = {
  output_type: string;
  size: number;
  /** stream */
  name?: string;
  /** error */
  ename?: string;
  /** display_data, execute_result */
  mime_types?: string[];
};

/** A cell of the open notebook as the page tells it: the keys every cell in a result has. */
export type LiveCell = {
  id: string;
  /** its position, from 0 */
  index: number;
  cell_type: CellType;
  source: string;
  /** null for a cell that is not code */
  execution_count: number | null;
  output_count: number;
  /** the outputs' size as JSON, in characters */
  outputs_size: number;
  /** its string tags */
  tags: string[];
};

/** A cell as listed: with a summary of its outputs. */
export type ListedCell = LiveCell & {
  output_summary: OutputSummary[];
};

/** A cell as read: with its outputs. */
export type ReadCell = LiveCell & {
  outputs: Output[];
};

export type CellResult = {
  /** the cell as it is now */
  cell: ListedCell;
};

/** The kernel opens a comm (its data), so that every panel says hello. */
export type ConnectMessage = {
  protocol: number;
  event: 'connect';
  /** the notebook the kernel was started for, when known */
  path: string | null;
};

/** The kernel asks the panel showing `path` to do one op. */
export type RequestMessage = {
  protocol: number;
  request_id: string;
  op: Op;
  path: string;
  args: { [key: string]: unknown };
};

/** The panel's answer to one request: its result, or why there is none (then `result` is absent). */
export type ReplyMessage = ReplyOk | ReplyError;

/** A panel says which notebook it shows, when a comm opens. */
export type HelloMessage = {
  protocol: number;
  event: 'hello';
  /** relative to the server's root */
  path: string;
  server_root: string | null;
  extension_version: string;
};

/** The person answered a staged proposal in the page (unasked). */
export type DecisionMessage = {
  protocol: number;
  event: 'decision';
  path: string;
  proposal_id: string;
  outcome: Decision;
  /** typed with a rejection; empty otherwise */
  reason: string;
};

export type ListCellsArgs = Record<string, never>;

export type ListCellsResult = {
  path: string;
  /** the notebook has unsaved changes */
  dirty: boolean;
  cells: ListedCell[];
};

export type ReadCellsArgs = {
  /** absent: every cell */
  cell_ids?: string[];
};

export type ReadCellsResult = {
  path: string;
  cells: ReadCell[];
};

export type ReplaceSourceArgs = {
  cell_id: string;
  source: string;
  /** absent: the cell's own; another type replaces the cell by one of that type with the same id */
  cell_type?: CellType;
  /** refused with `stale` unless the cell holds this source; null or absent: no check */
  expected_source?: string | null;
  /** a code cell's outputs are cleared unless false */
  clear_outputs?: boolean;
};

export type ReplaceSourceResult = CellResult;

export type InsertCellArgs = {
  /** null or absent: the new cell comes first */
  after_id?: string | null;
  /** absent: code */
  cell_type?: CellType;
  source: string;
  /** the id to keep, for a cell put back; ignored when the notebook has it */
  cell_id?: string;
};

export type InsertCellResult = CellResult;

export type DeleteCellArgs = {
  cell_id: string;
  expected_source?: string | null;
};

export type DeleteCellResult = {
  /** the cell as it was */
  cell: ListedCell;
  cell_count: number;
};

export type SetOutputsArgs = {
  cell_id: string;
  outputs: Output[];
  /** absent: the count stays */
  execution_count?: number | null;
};

export type SetOutputsResult = CellResult;

export type ScrollToArgs = {
  cell_id: string;
};

export type ScrollToResult = {
  index: number;
};

export type NotifyArgs = {
  message: string;
  /** absent or unknown: info */
  type?: NotifyType;
  /** milliseconds; absent: 8000 */
  auto_close?: number;
};

export type NotifyResult = {
  notification_id: string;
};

export type GetAgentMetadataArgs = Record<string, never>;

export type GetAgentMetadataResult = MetadataResult;

export type SetAgentMetadataArgs = {
  /** {} removes the key */
  metadata: AgentMetadata;
};

export type SetAgentMetadataResult = MetadataResult;

export type PromptShownArgs = {
  prompt_id: PromptId;
  /** how long the page looks (at most 30000); absent: 0 */
  wait_ms?: number;
};

export type PromptShownResult = {
  shown: boolean;
};

export type AskPermissionArgs = {
  prompt_id: PromptId;
  /** the cell the buttons go under; null: the active one */
  cell_id?: string | null;
  title: string;
  detail: string;
  rule: string;
  /** a cell edit under review: Accept / Reject */
  review?: boolean;
  always_label?: string;
  /** AskUserQuestion's: answered instead of allowed or denied */
  questions?: PromptQuestion[];
};

export type AskPermissionResult = {
  behavior: Behavior;
  message: string;
  /** question -> answer, for questions; else null */
  answers: { [key: string]: string } | null;
};

export type WithdrawPromptArgs = {
  prompt_id: PromptId;
  outcome: string;
};

export type WithdrawPromptResult = {
  removed: boolean;
};

export type StageProposalArgs = {
  proposal_id: string;
  kind: ProposalKind;
  /** the cell changed (needed but for an insert); for an insert the cell it goes after, null: the top */
  cell_id?: string | null;
  /** where the kernel saw it; the page finds the cell by its id */
  index?: number;
  /** proposed */
  source?: string;
  old_source?: string;
  cell_type?: CellType;
  /** the cell as a person names it */
  label?: string;
  /** bring the first proposal into view unless false */
  scroll?: boolean;
};

export type StageProposalResult = {
  proposal_id: string;
  index: number;
};

export type ResolveProposalArgs = {
  proposal_id: string;
  outcome: Outcome;
  reason?: string;
};

export type ResolveProposalResult = {
  proposal_id: string;
  outcome: Outcome;
};

/** Each op's arguments, as the kernel sends them. */
export type OpArgs = {
  list_cells: ListCellsArgs;
  read_cells: ReadCellsArgs;
  replace_source: ReplaceSourceArgs;
  insert_cell: InsertCellArgs;
  delete_cell: DeleteCellArgs;
  set_outputs: SetOutputsArgs;
  scroll_to: ScrollToArgs;
  notify: NotifyArgs;
  get_agent_metadata: GetAgentMetadataArgs;
  set_agent_metadata: SetAgentMetadataArgs;
  prompt_shown: PromptShownArgs;
  ask_permission: AskPermissionArgs;
  withdraw_prompt: WithdrawPromptArgs;
  stage_proposal: StageProposalArgs;
  resolve_proposal: ResolveProposalArgs;
};

/** Each op's result. */
export type OpResults = {
  list_cells: ListCellsResult;
  read_cells: ReadCellsResult;
  replace_source: ReplaceSourceResult;
  insert_cell: InsertCellResult;
  delete_cell: DeleteCellResult;
  set_outputs: SetOutputsResult;
  scroll_to: ScrollToResult;
  notify: NotifyResult;
  get_agent_metadata: GetAgentMetadataResult;
  set_agent_metadata: SetAgentMetadataResult;
  prompt_shown: PromptShownResult;
  ask_permission: AskPermissionResult;
  withdraw_prompt: WithdrawPromptResult;
  stage_proposal: StageProposalResult;
  resolve_proposal: ResolveProposalResult;
};
