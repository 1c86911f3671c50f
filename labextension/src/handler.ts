/**
 * The front end's half of the live-notebook protocol, without JupyterLab: one comm message from
 * the kernel in, one reply out. `index.ts` gives it a notebook panel behind the small `Notebook`
 * interface below; the unit tests give it a list of cells.
 *
 * The protocol (version, comm target, messages, ops) is defined once, as JSON Schemas, in
 * ipy_agent/notebook/protocol.json, which the kernel side reads too; `./protocol.ts` holds the
 * types generated from it. `handlers` must have exactly its ops, each taking its op's args and
 * returning its op's result: an op without a handler (or the other way round), or a result of
 * the wrong shape, does not compile. A request's args come from another process, so each
 * handler still checks the values it cannot do without (`bad_request`).
 *
 *   kernel -> front end: {protocol, request_id, op, path, args}
 *   front end -> kernel: {protocol, reply_to, ok, result | error, code}
 *                        {protocol, event: "hello", path, server_root, extension_version}
 * Results live under `result`, so a field of a cell (its `id`) never collides with protocol
 * keys (`request_id`, `reply_to`).
 */
import type { ICellMetadata, IOutput } from '@jupyterlab/nbformat';
import extension from '../package.json';
import { waitUntil } from './fallback';
import type { PromptAnswer, PromptQuestion, PromptRequest } from './fallback';
import {
  NOTIFY_TYPES,
  OUTCOMES,
  PROTOCOL,
  TARGET,
  type AgentMetadata,
  type CellType,
  type ErrorCode,
  type HelloMessage,
  type LiveCell,
  type ListedCell,
  type NotifyType,
  type Op,
  type OpArgs,
  type OpResults,
  type Output,
  type OutputSummary,
  type ReadCell,
  type ReplyMessage
} from './protocol';
import { ReviewBoard, arrivalOf, makeProposal, proposalProblem } from './review';

export { PROTOCOL, TARGET };
export type { CellType, ErrorCode, NotifyType, Op };
/** The extension's version: its package.json's (the kernel reads the built copy of that file). */
export const VERSION: string = extension.version;

/** A request's args as they come over the comm: not checked yet. */
export type Args = { readonly [key: string]: unknown };
/**
 * An op's args as a handler takes them: typed as the schema says, each possibly missing (the
 * page does not rely on the kernel: what a handler cannot do without, it checks).
 */
export type Received<T> = { readonly [K in keyof T]?: T[K] };
/** The result of any op. */
export type Result = OpResults[Op];

/** A cell as nbformat has it, its source as one string; only code cells have outputs. */
export interface CellData {
  id: string;
  cell_type: CellType;
  source: string;
  metadata: Partial<ICellMetadata>;
  execution_count: number | null;
  outputs: IOutput[];
}

/** What the handler needs of a notebook: JupyterLab's model in index.ts, a list in the tests. */
export interface Notebook {
  readonly path: string;
  readonly ready: boolean; // the model is loaded
  readonly dirty: boolean;
  cellIds(): string[];
  cell(index: number): CellData;
  /** Run the changes as one (one undo step, one sync to other clients). */
  transact(changes: () => void): void;
  insertCell(index: number, cell: Partial<CellData> & { cell_type: CellType }): void;
  deleteCell(index: number): void;
  setSource(index: number, source: string): void;
  /** Replace a code cell's outputs; an `executionCount` of undefined leaves the count alone. */
  setOutputs(index: number, outputs: IOutput[], executionCount?: number | null): void;
  scrollTo(index: number): Promise<void>;
  /** Whether the person scrolled the notebook since the run began (then the page does not scroll away). */
  personScrolled?(): boolean;
  /** Show a notification; returns its id. */
  notify(message: string, type: NotifyType, autoClose: number): string;
  /** The notebook's metadata under `key`, or undefined. */
  getMetadata(key: string): unknown;
  /** Set the notebook's metadata under `key` (the notebook becomes dirty); undefined deletes it. */
  setMetadata(key: string, value: AgentMetadata | undefined): void;
  /** Is the approval prompt's widget on the page? (fallback.ts; a page without it says no) */
  promptShown?(promptId: string): boolean;
  /** Draw answer buttons under the cell; resolves when the person clicks (fallback.ts). */
  askPermission?(request: PromptRequest): Promise<PromptAnswer>;
  /** Take those buttons away, leaving `outcome`; false when none were open. */
  withdrawPrompt?(promptId: string, outcome: string): boolean;
  /** The agent's staged changes, drawn in the cells for the person's Accept or Reject (review.ts). */
  readonly review: ReviewBoard;
}

/** An error with a code the kernel side can act on. */
export class BridgeError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string
  ) {
    super(message);
  }
}

/** The one metadata key the kernel may read and write: its own (its instructions live there). */
export const AGENT_METADATA_KEY = 'ipy_agent';

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function agentMetadata(nb: Notebook): AgentMetadata {
  const value = nb.getMetadata(AGENT_METADATA_KEY);
  return isObject(value) ? value : {};
}

function outputSize(output: IOutput): number {
  return JSON.stringify(output).length;
}

function summariseOutput(output: IOutput, size: number): OutputSummary {
  const summary: OutputSummary = { output_type: output.output_type, size };
  // (A key left undefined is left out of the JSON the kernel gets.)
  if (output.output_type === 'stream') {
    summary.name = typeof output.name === 'string' ? output.name : undefined;
  } else if (output.output_type === 'error') {
    summary.ename = typeof output.ename === 'string' ? output.ename : undefined;
  } else if ('data' in output) {
    summary.mime_types = Object.keys(output.data || {});
  }
  return summary;
}

/** The cell's tags (its policy for the agent, `agent:never-run`, is one), strings only. */
function cellTags(cell: CellData): string[] {
  const tags: unknown = cell.metadata.tags;
  return Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [];
}

/** What the kernel gets of every cell; `sizes`: each output serialised once (a PNG is large). */
function liveCell(cell: CellData, index: number, sizes: number[]): LiveCell {
  return {
    id: cell.id,
    index,
    cell_type: cell.cell_type,
    source: cell.source,
    execution_count: cell.cell_type === 'code' ? cell.execution_count : null,
    output_count: cell.outputs.length,
    outputs_size: sizes.reduce((n, size) => n + size, 0),
    tags: cellTags(cell)
  };
}

/** A cell as listed (list_cells, and the cell an edit leaves): with a summary of its outputs. */
function listedCell(nb: Notebook, index: number): ListedCell {
  const cell = nb.cell(index);
  const sizes = cell.outputs.map(outputSize);
  const summary = cell.outputs.map((output, k) => summariseOutput(output, sizes[k]));
  return { ...liveCell(cell, index, sizes), output_summary: summary };
}

/** A cell as read (read_cells): with its outputs, as nbformat has them. */
function readCell(nb: Notebook, index: number): ReadCell {
  const cell = nb.cell(index);
  const outputs: Output[] = cell.outputs;
  return { ...liveCell(cell, index, cell.outputs.map(outputSize)), outputs };
}

function allIndices(nb: Notebook): number[] {
  return nb.cellIds().map((_, i) => i);
}

function findIndex(nb: Notebook, cellId: unknown): number {
  if (typeof cellId !== 'string' || !cellId) {
    throw new BridgeError('bad_request', `cell_id must be a non-empty string, not ${JSON.stringify(cellId)}`);
  }
  const index = nb.cellIds().indexOf(cellId);
  if (index < 0) {
    throw new BridgeError('not_found', `no cell with id ${JSON.stringify(cellId)} in ${nb.path}`);
  }
  return index;
}

/** Compare-and-set: refuse when the cell's source is no longer what the kernel last saw. */
function checkSource(nb: Notebook, index: number, expected: unknown): void {
  if (typeof expected === 'string' && nb.cell(index).source !== expected) {
    throw new BridgeError('stale', 'the cell changed since the agent read it');
  }
}

function cellType(value: unknown): CellType {
  if (value === 'code' || value === 'markdown' || value === 'raw') {
    return value;
  }
  throw new BridgeError('bad_request', `cell_type must be code, markdown or raw, not ${JSON.stringify(value)}`);
}

/** A prompt id as the kernel makes them (it becomes part of a CSS class). */
function promptId(args: Received<{ prompt_id: string }>): string {
  const id = args.prompt_id;
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]+$/.test(id)) {
    throw new BridgeError('bad_request', `prompt_id must be letters, digits, - or _, not ${JSON.stringify(id)}`);
  }
  return id;
}

const MAX_PROMPT_WAIT_MS = 30000;

/** AskUserQuestion's questions as the kernel sends them, checked: each a question, a header and options. */
function promptQuestions(value: unknown): PromptQuestion[] {
  const bad = (why: string) => new BridgeError('bad_request', `questions: ${why}`);
  if (!Array.isArray(value) || value.length === 0) {
    throw bad('a non-empty list of questions is needed');
  }
  return value.map((q: unknown) => {
    if (!isObject(q) || typeof q.question !== 'string' || !q.question || !Array.isArray(q.options)) {
      throw bad(`each needs a question and options, not ${JSON.stringify(q)}`);
    }
    const options = q.options.map((o: unknown) => {
      if (!isObject(o) || typeof o.label !== 'string' || !o.label) {
        throw bad(`an option needs a label, not ${JSON.stringify(o)}`);
      }
      return { label: o.label, description: typeof o.description === 'string' ? o.description : '' };
    });
    return { question: q.question, header: String(q.header ?? ''), options, multi_select: q.multi_select === true };
  });
}

type Handler<O extends Op> = (nb: Notebook, args: Received<OpArgs[O]>) => OpResults[O] | Promise<OpResults[O]>;

export const handlers: { readonly [O in Op]: Handler<O> } = {
  list_cells: nb => ({
    path: nb.path,
    dirty: nb.dirty,
    cells: allIndices(nb).map(i => listedCell(nb, i))
  }),

  read_cells: (nb, args) => {
    const ids: unknown = args.cell_ids;
    const indices = Array.isArray(ids) ? ids.map(id => findIndex(nb, id)) : allIndices(nb);
    return { path: nb.path, cells: indices.map(i => readCell(nb, i)) };
  },

  replace_source: (nb, args) => {
    const index = findIndex(nb, args.cell_id);
    checkSource(nb, index, args.expected_source);
    const old = nb.cell(index);
    const wanted = args.cell_type ? cellType(args.cell_type) : old.cell_type;
    const source = String(args.source ?? '');
    nb.transact(() => {
      if (wanted !== old.cell_type) {
        // A cell cannot change type in place: replace it by one of the new type, same id.
        nb.deleteCell(index);
        nb.insertCell(index, { id: old.id, cell_type: wanted, source, metadata: old.metadata });
      } else {
        nb.setSource(index, source);
        if (old.cell_type === 'code' && args.clear_outputs !== false) {
          nb.setOutputs(index, [], null);
        }
      }
    });
    return { cell: listedCell(nb, index) };
  },

  insert_cell: (nb, args) => {
    const index = args.after_id ? findIndex(nb, args.after_id) + 1 : 0;
    const type = cellType(args.cell_type ?? 'code');
    // A cell put back (a rewind of its deletion) keeps its id, unless the notebook has it again.
    const id = typeof args.cell_id === 'string' && args.cell_id && !nb.cellIds().includes(args.cell_id);
    const kept = id ? { id: args.cell_id as string } : {};
    nb.insertCell(index, { ...kept, cell_type: type, source: String(args.source ?? '') });
    return { cell: listedCell(nb, index) };
  },

  delete_cell: (nb, args) => {
    const index = findIndex(nb, args.cell_id);
    checkSource(nb, index, args.expected_source);
    const gone = listedCell(nb, index);
    nb.deleteCell(index);
    return { cell: gone, cell_count: nb.cellIds().length };
  },

  set_outputs: (nb, args) => {
    const index = findIndex(nb, args.cell_id);
    const type = nb.cell(index).cell_type;
    if (type !== 'code') {
      throw new BridgeError('bad_request', `cell ${args.cell_id} is a ${type} cell; only code cells have outputs`);
    }
    const outputs = Array.isArray(args.outputs) ? (args.outputs as IOutput[]) : []; // nbformat's, as the kernel made them
    const count = 'execution_count' in args ? (args.execution_count ?? null) : undefined; // absent: the count stays
    nb.setOutputs(index, outputs, count);
    return { cell: listedCell(nb, index) };
  },

  scroll_to: async (nb, args) => {
    const index = findIndex(nb, args.cell_id);
    await nb.scrollTo(index);
    return { index };
  },

  notify: (nb, args) => {
    const type = args.type !== undefined && NOTIFY_TYPES.includes(args.type) ? args.type : 'info';
    const autoClose = typeof args.auto_close === 'number' ? args.auto_close : 8000;
    return { notification_id: nb.notify(String(args.message ?? ''), type, autoClose) };
  },

  get_agent_metadata: nb => ({ metadata: agentMetadata(nb) }),

  set_agent_metadata: (nb, args) => {
    const value = args.metadata;
    if (!isObject(value)) {
      throw new BridgeError('bad_request', `metadata must be an object, not ${JSON.stringify(value)}`);
    }
    nb.setMetadata(AGENT_METADATA_KEY, Object.keys(value).length > 0 ? value : undefined);
    return { metadata: agentMetadata(nb) };
  },

  prompt_shown: async (nb, args) => {
    const id = promptId(args);
    const wait = typeof args.wait_ms === 'number' ? Math.min(Math.max(args.wait_ms, 0), MAX_PROMPT_WAIT_MS) : 0;
    return { shown: await waitUntil(() => nb.promptShown?.(id) ?? false, wait) };
  },

  ask_permission: async (nb, args) => {
    const request: PromptRequest = {
      prompt_id: promptId(args),
      cell_id: typeof args.cell_id === 'string' && args.cell_id ? args.cell_id : null,
      title: String(args.title ?? ''),
      detail: String(args.detail ?? ''),
      rule: String(args.rule ?? ''),
      review: args.review === true,
      always_label: typeof args.always_label === 'string' ? args.always_label : ''
    };
    if (args.questions !== undefined) {
      request.questions = promptQuestions(args.questions);
    }
    if (!nb.askPermission) {
      throw new BridgeError('error', 'this page cannot draw answer buttons');
    }
    const answer = await nb.askPermission(request);
    return { behavior: answer.behavior, message: answer.message, answers: answer.answers ?? null }; // answers: questions only
  },

  withdraw_prompt: (nb, args) => ({
    removed: nb.withdrawPrompt?.(promptId(args), String(args.outcome ?? '')) ?? false
  }),

  stage_proposal: async (nb, args) => {
    const problem = proposalProblem(args);
    if (problem) {
      throw new BridgeError('bad_request', problem);
    }
    let index: number;
    if (args.kind === 'insert') {
      index = args.cell_id ? findIndex(nb, args.cell_id) + 1 : 0;
    } else {
      index = findIndex(nb, args.cell_id);
    }
    const arrival = arrivalOf(args.scroll !== false, nb.review.open.length === 0, nb.personScrolled?.() ?? false);
    if (arrival === 'reveal' && nb.cellIds().length > 0) {
      await nb.scrollTo(Math.min(index, nb.cellIds().length - 1));
    }
    const proposal = makeProposal(args, index);
    nb.review.stage(proposal, arrival);
    return { proposal_id: proposal.id, index };
  },

  resolve_proposal: (nb, args) => {
    const outcome = args.outcome;
    if (outcome === undefined || !OUTCOMES.includes(outcome)) {
      throw new BridgeError(
        'bad_request',
        `outcome must be one of ${OUTCOMES.join(', ')}, not ${JSON.stringify(outcome)}`
      );
    }
    const id = String(args.proposal_id ?? '');
    if (!nb.review.resolve(id, outcome, String(args.reason ?? ''))) {
      throw new BridgeError('not_found', `no staged proposal ${JSON.stringify(args.proposal_id)} in ${nb.path}`);
    }
    return { proposal_id: id, outcome };
  }
};

function isOp(op: string): op is Op {
  return Object.prototype.hasOwnProperty.call(handlers, op);
}

/** The result of one op, or a BridgeError saying why there is none. */
export async function handle(nb: Notebook, op: string, args: Args): Promise<Result> {
  if (!nb.ready) {
    throw new BridgeError('not_ready', 'the notebook is not loaded yet');
  }
  if (!isOp(op)) {
    throw new BridgeError('unknown_op', `unknown op ${JSON.stringify(op)}`);
  }
  // The args as received, for the op's handler to check: each takes them as its op's, possibly missing.
  const handler = handlers[op] as (nb: Notebook, args: Args) => Result | Promise<Result>;
  return handler(nb, args);
}

type Request = { protocol?: unknown; request_id?: unknown; op?: unknown; path?: unknown; args?: Args };

/**
 * The reply to one comm message from the kernel, or null when there is none to send: the
 * message is for another notebook on the same kernel (a kernel may be shared), or no request.
 */
export async function reply(nb: Notebook, data: unknown): Promise<ReplyMessage | null> {
  const req: Request = typeof data === 'object' && data !== null ? data : {};
  if ((req.path && req.path !== nb.path) || !req.request_id) {
    return null;
  }
  const base = { protocol: PROTOCOL, reply_to: String(req.request_id) };
  if (req.protocol !== PROTOCOL) {
    return {
      ...base,
      ok: false,
      code: 'version_mismatch',
      error:
        `protocol mismatch: the kernel speaks version ${req.protocol}, this JupyterLab extension ` +
        `(ipy-agent-notebook ${VERSION}) speaks version ${PROTOCOL}; install the same ipy_agent ` +
        'version in the kernel and the server, then reload the page'
    };
  }
  try {
    return { ...base, ok: true, result: await handle(nb, String(req.op), req.args || {}) };
  } catch (err) {
    return {
      ...base,
      ok: false,
      code: err instanceof BridgeError ? err.code : 'error',
      error: String(err instanceof Error ? err.message : err)
    };
  }
}

/** What a panel says when a comm opens: which notebook it shows, and where the server's root is. */
export function hello(nb: Notebook, serverRoot: string): HelloMessage {
  return { protocol: PROTOCOL, event: 'hello', path: nb.path, server_root: serverRoot, extension_version: VERSION };
}
