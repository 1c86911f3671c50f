/**
 * The message handler against an in-memory notebook: every op of the protocol, its reply's keys
 * as the schemas of ipy_agent/notebook/protocol.json name them, and the requests it must refuse
 * or ignore. (The kernel's tests check the same replies' values against the schemas.)
 */
import type { IOutput } from '@jupyterlab/nbformat';
import { beforeEach, describe, expect, it } from 'vitest';
import protocol from '../../ipy_agent/notebook/protocol.json';
import extension from '../package.json';
import { CellData, CellType, Notebook, NotifyType, PROTOCOL, VERSION, handlers, hello, reply } from '../src/handler';
import type { AgentMetadata, DecisionMessage, Op, OpResults, ReplyError, ReplyMessage, ReplyOk } from '../src/protocol';
import type { PromptAnswer, PromptRequest } from '../src/fallback';
import { ReviewBoard } from '../src/review';
import { RecordingView } from './recording_view';

const PATH = 'work/analysis.ipynb';

/** A notebook as a list of cells, recording what the handler asked of it. */
class ListNotebook implements Notebook {
  path = PATH;
  ready = true;
  dirty = true;
  transactions = 0;
  scrolled: number[] = [];
  notes: [string, NotifyType, number][] = [];
  metadata: { [key: string]: unknown } = { kernelspec: { name: 'python3' } };
  promptShown?: (promptId: string) => boolean;
  askPermission?: (request: PromptRequest) => Promise<PromptAnswer>;
  withdrawPrompt?: (promptId: string, outcome: string) => boolean;
  personScrolled?: () => boolean;
  private made = 0;
  view = new RecordingView();
  decisions: DecisionMessage[] = [];
  review = new ReviewBoard(
    this.view,
    m => this.decisions.push(m) > 0,
    () => this.path
  );

  constructor(public cells: CellData[]) {}

  cellIds(): string[] {
    return this.cells.map(c => c.id);
  }
  cell(index: number): CellData {
    return this.cells[index];
  }
  transact(changes: () => void): void {
    this.transactions++;
    changes();
  }
  insertCell(index: number, cell: Partial<CellData> & { cell_type: CellType }): void {
    this.cells.splice(index, 0, {
      id: cell.id ?? `new${++this.made}`,
      source: '',
      metadata: {},
      execution_count: null,
      outputs: [],
      ...cell
    });
  }
  deleteCell(index: number): void {
    this.cells.splice(index, 1);
  }
  setSource(index: number, source: string): void {
    this.cells[index].source = source;
  }
  setOutputs(index: number, outputs: IOutput[], executionCount?: number | null): void {
    this.cells[index].outputs = outputs;
    if (executionCount !== undefined) {
      this.cells[index].execution_count = executionCount;
    }
  }
  async scrollTo(index: number): Promise<void> {
    this.scrolled.push(index);
  }
  notify(message: string, type: NotifyType, autoClose: number): string {
    this.notes.push([message, type, autoClose]);
    return `note${this.notes.length}`;
  }
  getMetadata(key: string): unknown {
    return this.metadata[key];
  }
  setMetadata(key: string, value: AgentMetadata | undefined): void {
    if (value === undefined) {
      delete this.metadata[key];
    } else {
      this.metadata[key] = value;
    }
  }
}

const stream: IOutput = { output_type: 'stream', name: 'stdout', text: 'hi\n' };
const error: IOutput = { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: [] };
const display: IOutput = {
  output_type: 'display_data',
  data: { 'text/plain': '1', 'image/png': 'iVBOR' },
  metadata: {}
};

function code(id: string, source: string, outputs: IOutput[] = [], count: number | null = null): CellData {
  return { id, cell_type: 'code', source, metadata: { tags: ['keep'] }, execution_count: count, outputs };
}

function markdown(id: string, source: string): CellData {
  return { id, cell_type: 'markdown', source, metadata: {}, execution_count: null, outputs: [] };
}

let nb: ListNotebook;
let requests = 0;

beforeEach(() => {
  nb = new ListNotebook([
    code('a', 'import pandas as pd', [], 1),
    markdown('b', '# Results'),
    code('c', 'df.describe()', [stream, error, display], 2)
  ]);
});

/** Send one request as the kernel does; returns the reply (or null when none is sent). */
function send(op: string, args: object = {}, extra: object = {}): Promise<ReplyMessage | null> {
  return reply(nb, { protocol: PROTOCOL, request_id: `r${++requests}`, op, path: PATH, args, ...extra });
}

type Schema = { $ref?: string; properties?: { [key: string]: unknown }; allOf?: Schema[]; [key: string]: unknown };
const defs: { [name: string]: Schema } = protocol.$defs;

/** The keys a schema of protocol.json names (with those of the schemas it refers to or extends). */
function keysOf(schema: Schema): string[] {
  const resolved = schema.$ref ? defs[schema.$ref.replace('#/$defs/', '')] : schema;
  const inherited = (resolved.allOf ?? []).flatMap(keysOf);
  return [...inherited, ...Object.keys(resolved.properties ?? {})].sort();
}

/** The result of a request that must succeed, after checking the reply's and result's keys. */
async function ok<O extends Op>(op: O, args: object = {}): Promise<OpResults[O]> {
  const answer = await send(op, args);
  expect(answer).toMatchObject({ protocol: PROTOCOL, reply_to: `r${requests}`, ok: true });
  expect(Object.keys(answer!).sort()).toEqual(keysOf(defs.ReplyOk));
  const result = (answer as ReplyOk).result as OpResults[O];
  expect(Object.keys(result).sort()).toEqual(keysOf(protocol.ops[op].result));
  return result;
}

/** The code and message of a request that must be refused. */
async function refused(op: string, args: object = {}, extra: object = {}): Promise<ReplyError> {
  const answer = await send(op, args, extra);
  expect(answer).toMatchObject({ protocol: PROTOCOL, ok: false });
  expect(Object.keys(answer!).sort()).toEqual(keysOf(defs.ReplyError));
  expect(Object.keys(protocol.errors)).toContain((answer as ReplyError).code);
  return answer as ReplyError;
}

const listedKeys = keysOf(defs.ListedCell);
const readKeys = keysOf(defs.ReadCell);

describe('the protocol file', () => {
  it('has a handler for exactly its ops', () => {
    expect(Object.keys(handlers).sort()).toEqual(Object.keys(protocol.ops).sort());
  });

  it('names the keys of every message the extension sends', () => {
    expect(Object.keys(hello(nb, '/srv')).sort()).toEqual(keysOf(protocol.messages.hello));
    expect(listedKeys).toContain('tags');
    expect(readKeys).toContain('outputs');
  });

  it('is the version package.json gives', () => {
    expect(VERSION).toBe(extension.version);
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('hello', () => {
  it('names the notebook, the server root and the extension', () => {
    expect(hello(nb, '/srv')).toEqual({
      protocol: 1,
      event: 'hello',
      path: PATH,
      server_root: '/srv',
      extension_version: VERSION
    });
  });
});

describe('list_cells', () => {
  it('lists every cell with a summary of its outputs', async () => {
    const result = await ok('list_cells');
    expect(result.path).toBe(PATH);
    expect(result.dirty).toBe(true);
    const cells = result.cells;
    expect(cells.map(c => c.id)).toEqual(['a', 'b', 'c']);
    for (const c of cells) {
      expect(Object.keys(c).sort()).toEqual(listedKeys);
    }
    expect(cells[1]).toMatchObject({ index: 1, cell_type: 'markdown', source: '# Results', execution_count: null });
    const size = (o: IOutput) => JSON.stringify(o).length;
    expect(cells[2]).toMatchObject({
      index: 2,
      execution_count: 2,
      output_count: 3,
      outputs_size: size(stream) + size(error) + size(display),
      output_summary: [
        { output_type: 'stream', name: 'stdout', size: size(stream) },
        { output_type: 'error', ename: 'ValueError', size: size(error) },
        { output_type: 'display_data', mime_types: ['text/plain', 'image/png'], size: size(display) }
      ]
    });
  });
});

describe('tags', () => {
  it('sends the string tags of each cell (its policy for the agent among them), [] without any', async () => {
    nb.cells[0].metadata = { tags: ['agent:never-run', 7, 'slow'] } as unknown as CellData['metadata'];
    const cells = (await ok('list_cells')).cells;
    expect(cells.map(c => c.tags)).toEqual([['agent:never-run', 'slow'], [], ['keep']]);
  });
});

describe('read_cells', () => {
  it('reads the cells asked for, in that order, with their outputs', async () => {
    const cells = (await ok('read_cells', { cell_ids: ['c', 'a'] })).cells;
    expect(cells.map(c => [c.id, c.index])).toEqual([
      ['c', 2],
      ['a', 0]
    ]);
    expect(Object.keys(cells[0]).sort()).toEqual(readKeys);
    expect(cells[0].outputs).toEqual([stream, error, display]);
  });

  it('reads every cell without ids', async () => {
    const cells = (await ok('read_cells')).cells;
    expect(cells.map(c => c.id)).toEqual(['a', 'b', 'c']);
  });

  it('refuses an id that is not there', async () => {
    const answer = await refused('read_cells', { cell_ids: ['a', 'zz'] });
    expect(answer.code).toBe('not_found');
    expect(answer.error).toBe(`no cell with id "zz" in ${PATH}`);
  });
});

describe('replace_source', () => {
  it('replaces the source and clears a code cell outputs, in one transaction', async () => {
    const result = await ok('replace_source', { cell_id: 'c', source: 'df.head()', expected_source: 'df.describe()' });
    expect(result.cell).toMatchObject({
      id: 'c',
      index: 2,
      source: 'df.head()',
      output_count: 0,
      execution_count: null
    });
    expect(nb.cells[2]).toMatchObject({ source: 'df.head()', outputs: [], execution_count: null });
    expect(nb.transactions).toBe(1);
  });

  it('keeps the outputs when asked to', async () => {
    await ok('replace_source', { cell_id: 'c', source: 'df.head()', clear_outputs: false });
    expect(nb.cells[2]).toMatchObject({ source: 'df.head()', outputs: [stream, error, display], execution_count: 2 });
  });

  it('refuses when the cell changed since the kernel read it, and changes nothing', async () => {
    const answer = await refused('replace_source', { cell_id: 'a', source: 'x = 1', expected_source: 'import numpy' });
    expect(answer).toMatchObject({ code: 'stale', error: 'the cell changed since the agent read it' });
    expect(nb.cells[0].source).toBe('import pandas as pd');
  });

  it('changes a cell type by a new cell with the same id and metadata', async () => {
    const result = await ok('replace_source', { cell_id: 'a', source: 'Notes', cell_type: 'markdown' });
    expect(result.cell).toMatchObject({ id: 'a', index: 0, cell_type: 'markdown', source: 'Notes' });
    expect(nb.cells[0]).toMatchObject({ id: 'a', cell_type: 'markdown', metadata: { tags: ['keep'] } });
    expect(nb.cells).toHaveLength(3);
  });

  it('refuses a cell type that is not one', async () => {
    const answer = await refused('replace_source', { cell_id: 'a', source: 'x', cell_type: 'python' });
    expect(answer).toMatchObject({
      code: 'bad_request',
      error: 'cell_type must be code, markdown or raw, not "python"'
    });
    expect(nb.cells[0].source).toBe('import pandas as pd');
  });

  it('refuses a request without a cell id', async () => {
    const answer = await refused('replace_source', { source: 'x' });
    expect(answer).toMatchObject({ code: 'bad_request', error: 'cell_id must be a non-empty string, not undefined' });
  });
});

describe('insert_cell', () => {
  it('inserts after a cell', async () => {
    const result = await ok('insert_cell', { after_id: 'b', cell_type: 'markdown', source: '## More' });
    expect(result.cell).toMatchObject({ id: 'new1', index: 2, cell_type: 'markdown', source: '## More' });
    expect(nb.cellIds()).toEqual(['a', 'b', 'new1', 'c']);
  });

  it('inserts a code cell first without after_id', async () => {
    const result = await ok('insert_cell', { after_id: null, source: 'import os' });
    expect(result.cell).toMatchObject({ index: 0, cell_type: 'code', source: 'import os' });
    expect(nb.cells).toHaveLength(4);
  });

  it('puts a cell back under its own id, or a new one when the notebook has that id again', async () => {
    const back = await ok('insert_cell', { after_id: 'a', source: 'b = 2', cell_id: 'gone' });
    expect(back.cell).toMatchObject({ id: 'gone', index: 1, source: 'b = 2' });
    const again = await ok('insert_cell', { after_id: 'a', source: 'b = 2', cell_id: 'c' });
    expect(again.cell).toMatchObject({ id: 'new1', index: 1 });
    expect(nb.cellIds()).toEqual(['a', 'new1', 'gone', 'b', 'c']);
  });

  it('refuses an unknown cell type before inserting anything', async () => {
    expect((await refused('insert_cell', { cell_type: 'sql', source: 'select 1' })).code).toBe('bad_request');
    expect(nb.cells).toHaveLength(3);
  });
});

describe('delete_cell', () => {
  it('deletes the cell and says what it was', async () => {
    const result = await ok('delete_cell', { cell_id: 'b', expected_source: '# Results' });
    expect(result).toMatchObject({ cell: { id: 'b', index: 1, source: '# Results' }, cell_count: 2 });
    expect(nb.cellIds()).toEqual(['a', 'c']);
  });

  it('refuses when the cell changed since the kernel read it', async () => {
    expect((await refused('delete_cell', { cell_id: 'b', expected_source: '# Draft' })).code).toBe('stale');
    expect(nb.cells).toHaveLength(3);
  });
});

describe('set_outputs', () => {
  it('sets the outputs and the execution count', async () => {
    const result = await ok('set_outputs', { cell_id: 'a', outputs: [stream], execution_count: 7 });
    expect(result.cell).toMatchObject({ id: 'a', output_count: 1, execution_count: 7 });
    expect(nb.cells[0].outputs).toEqual([stream]);
  });

  it('leaves the execution count alone when the request has none', async () => {
    await ok('set_outputs', { cell_id: 'c', outputs: [] });
    expect(nb.cells[2]).toMatchObject({ outputs: [], execution_count: 2 });
  });

  it('clears the execution count when it is null', async () => {
    await ok('set_outputs', { cell_id: 'c', outputs: [], execution_count: null });
    expect(nb.cells[2].execution_count).toBeNull();
  });

  it('refuses a markdown cell', async () => {
    const answer = await refused('set_outputs', { cell_id: 'b', outputs: [stream] });
    expect(answer).toMatchObject({
      code: 'bad_request',
      error: 'cell b is a markdown cell; only code cells have outputs'
    });
  });
});

describe('scroll_to', () => {
  it('scrolls to the cell', async () => {
    expect(await ok('scroll_to', { cell_id: 'c' })).toEqual({ index: 2 });
    expect(nb.scrolled).toEqual([2]);
  });
});

describe('notify', () => {
  it('shows the message as asked', async () => {
    const result = await ok('notify', { message: 'Saved', type: 'success', auto_close: 3000 });
    expect(result).toEqual({ notification_id: 'note1' });
    expect(nb.notes).toEqual([['Saved', 'success', 3000]]);
  });

  it('falls back to an info note that closes after 8 s', async () => {
    await ok('notify', { message: 'Hello', type: 'shout' });
    expect(nb.notes).toEqual([['Hello', 'info', 8000]]);
  });
});

describe('stage_proposal and resolve_proposal', () => {
  const stage = { kind: 'replace', cell_id: 'c', source: 'df.head()', old_source: 'df.describe()', label: 'cell 3' };

  it('draws a proposal without changing the model, and scrolls to the first one', async () => {
    const before = JSON.stringify(nb.cells);
    expect(await ok('stage_proposal', { ...stage, proposal_id: 'p1', scroll: true })).toEqual({
      proposal_id: 'p1',
      index: 2
    });
    expect(await ok('stage_proposal', { ...stage, proposal_id: 'p2', kind: 'insert', cell_id: 'a' })).toEqual({
      proposal_id: 'p2',
      index: 1
    });
    expect((await ok('stage_proposal', { proposal_id: 'p3', kind: 'insert', source: 'x' })).index).toBe(0);
    expect(JSON.stringify(nb.cells)).toBe(before);
    expect(nb.view.shown).toEqual(['p1', 'p2', 'p3']);
    expect(nb.scrolled).toEqual([2]); // only to the first open proposal
    expect(nb.review.open.map(p => p.kind)).toEqual(['replace', 'insert', 'insert']);
  });

  it('does not scroll when the person scrolled since the run began: a notice offers to go there', async () => {
    nb.personScrolled = () => true;
    await ok('stage_proposal', { ...stage, proposal_id: 'p1', scroll: true });
    expect(nb.scrolled).toEqual([]);
    expect(nb.view.offered).toEqual(['p1']);
    expect(nb.view.revealed).toEqual([]);
  });

  it('shows the outcome the kernel sends, and refuses an unknown proposal or outcome', async () => {
    await ok('stage_proposal', { ...stage, proposal_id: 'p1' });
    expect(await ok('resolve_proposal', { proposal_id: 'p1', outcome: 'rejected', reason: 'no' })).toEqual({
      proposal_id: 'p1',
      outcome: 'rejected'
    });
    expect(nb.view.settled).toEqual([['p1', 'rejected', 'Rejected: no']]);
    expect((await refused('resolve_proposal', { proposal_id: 'zz', outcome: 'accepted' })).code).toBe('not_found');
    expect((await refused('resolve_proposal', { proposal_id: 'p1', outcome: 'maybe' })).code).toBe('bad_request');
  });

  it('refuses a proposal for a cell that is not there, or of no known kind', async () => {
    expect((await refused('stage_proposal', { ...stage, proposal_id: 'p1', cell_id: 'zz' })).code).toBe('not_found');
    expect((await refused('stage_proposal', { ...stage, proposal_id: 'p1', kind: 'move' })).code).toBe('bad_request');
    expect(nb.view.shown).toEqual([]);
  });
});

describe('the agent metadata', () => {
  it('reads an empty object when the notebook has none', async () => {
    expect(await ok('get_agent_metadata')).toEqual({ metadata: {} });
  });

  it('writes the ipy_agent key and reads it back, leaving the rest of the metadata alone', async () => {
    const written = await ok('set_agent_metadata', { metadata: { instructions: 'Use polars, not pandas.' } });
    expect(written).toEqual({ metadata: { instructions: 'Use polars, not pandas.' } });
    expect(nb.metadata).toEqual({
      kernelspec: { name: 'python3' },
      ipy_agent: { instructions: 'Use polars, not pandas.' }
    });
    expect(await ok('get_agent_metadata')).toEqual({ metadata: { instructions: 'Use polars, not pandas.' } });
  });

  it('removes the key when given an empty object', async () => {
    nb.metadata.ipy_agent = { instructions: 'old' };
    expect(await ok('set_agent_metadata', { metadata: {} })).toEqual({ metadata: {} });
    expect(Object.keys(nb.metadata)).toEqual(['kernelspec']);
  });

  it('refuses metadata that is not an object, and changes nothing', async () => {
    nb.metadata.ipy_agent = { instructions: 'keep' };
    const answer = await refused('set_agent_metadata', { metadata: 'Use polars' });
    expect(answer).toMatchObject({ code: 'bad_request', error: 'metadata must be an object, not "Use polars"' });
    expect(nb.metadata.ipy_agent).toEqual({ instructions: 'keep' });
  });

  it('reads a value that is not an object as none', async () => {
    nb.metadata.ipy_agent = 'garbage';
    expect(await ok('get_agent_metadata')).toEqual({ metadata: {} });
  });
});

describe('requests the handler refuses or ignores', () => {
  it('refuses another protocol version, saying what to do, and runs nothing', async () => {
    const answer = await refused('delete_cell', { cell_id: 'a' }, { protocol: PROTOCOL + 1 });
    expect(answer.code).toBe('version_mismatch');
    expect(answer.error).toContain(`the kernel speaks version ${PROTOCOL + 1}`);
    expect(answer.error).toContain(`ipy-agent-notebook ${VERSION}) speaks version ${PROTOCOL}`);
    expect(answer.error).toContain('install the same ipy_agent version in the kernel and the server');
    expect(nb.cells).toHaveLength(3);
  });

  it('refuses an op it does not know', async () => {
    const answer = await refused('run_all');
    expect(answer).toMatchObject({ code: 'unknown_op', error: 'unknown op "run_all"' });
    expect((await refused('toString')).code).toBe('unknown_op');
  });

  it('refuses every op while the notebook is not loaded', async () => {
    nb.ready = false;
    expect((await refused('list_cells')).code).toBe('not_ready');
  });

  it('does not answer a request for another notebook on the same kernel', async () => {
    expect(await send('delete_cell', { cell_id: 'a' }, { path: 'other.ipynb' })).toBeNull();
    expect(nb.cells).toHaveLength(3);
  });

  it('answers a request without a path', async () => {
    expect(await send('list_cells', {}, { path: null })).toMatchObject({ ok: true });
  });

  it('does not answer a message that is not a request', async () => {
    expect(await reply(nb, { protocol: PROTOCOL, event: 'connect', path: PATH })).toBeNull();
    expect(await reply(nb, null)).toBeNull();
  });

  it('reports an unexpected failure as an error with its message', async () => {
    nb.scrollTo = async () => {
      throw new Error('the panel was disposed');
    };
    expect(await refused('scroll_to', { cell_id: 'a' })).toMatchObject({
      code: 'error',
      error: 'the panel was disposed'
    });
  });
});

describe('the fallback prompt', () => {
  it('says a prompt is shown as soon as it appears, within the wait', async () => {
    let looks = 0;
    nb.promptShown = id => id === 'p1' && ++looks >= 3;
    expect(await ok('prompt_shown', { prompt_id: 'p1', wait_ms: 2000 })).toEqual({ shown: true });
    expect(looks).toBe(3);
  });

  it('says a prompt is not shown after the wait, and on a page that cannot tell', async () => {
    nb.promptShown = () => false;
    expect(await ok('prompt_shown', { prompt_id: 'p1', wait_ms: 150 })).toEqual({ shown: false });
    nb.promptShown = undefined;
    expect(await ok('prompt_shown', { prompt_id: 'p1', wait_ms: 0 })).toEqual({ shown: false });
  });

  it('draws buttons under the cell and replies with what the person clicked', async () => {
    const asked: PromptRequest[] = [];
    nb.askPermission = async request => {
      asked.push(request);
      return { behavior: 'deny', message: 'not that file' };
    };
    const args = { prompt_id: 'p1', cell_id: 'c', title: 'Edit notes.txt', detail: '-teh\n+the', rule: 'Edit' };
    expect(await ok('ask_permission', args)).toEqual({ behavior: 'deny', message: 'not that file', answers: null });
    expect(asked).toEqual([{ ...args, review: false, always_label: '' }]);
  });

  it('passes a review and its lasting choice to the buttons, and Accept all back to the kernel', async () => {
    const asked: PromptRequest[] = [];
    nb.askPermission = async request => {
      asked.push(request);
      return { behavior: 'accept_all', message: '' };
    };
    const label = 'Always accept edits to notebooks in this folder';
    const args = { prompt_id: 'p3', cell_id: 'c', title: 'Replace cell 2', detail: '', rule: 'Edit(./*.ipynb)' };
    expect(await ok('ask_permission', { ...args, review: true, always_label: label })).toEqual({
      behavior: 'accept_all',
      message: '',
      answers: null
    });
    expect(asked).toEqual([{ ...args, review: true, always_label: label }]);
  });

  it("asks AskUserQuestion's questions and replies with the answers; refuses a question without options", async () => {
    const asked: PromptRequest[] = [];
    nb.askPermission = async request => {
      asked.push(request);
      return { behavior: 'allow', message: '', answers: { 'Which file?': 'b.csv' } };
    };
    const questions = [{ question: 'Which file?', header: 'File', options: [{ label: 'a.csv' }, { label: 'b.csv' }] }];
    const args = { prompt_id: 'p2', cell_id: 'c', title: 'AskUserQuestion', detail: '', rule: '', questions };
    expect(await ok('ask_permission', args)).toEqual({
      behavior: 'allow',
      message: '',
      answers: { 'Which file?': 'b.csv' }
    });
    expect(asked[0].questions).toEqual([
      {
        question: 'Which file?',
        header: 'File',
        options: [
          { label: 'a.csv', description: '' },
          { label: 'b.csv', description: '' }
        ],
        multi_select: false
      }
    ]);
    const bad = await refused('ask_permission', { ...args, questions: [{ question: 'Which?', header: 'F' }] });
    expect(bad.code).toBe('bad_request');
  });

  it('refuses to ask where the page cannot draw, and a prompt id that is no CSS name', async () => {
    expect((await refused('ask_permission', { prompt_id: 'p1' })).code).toBe('error');
    expect((await refused('prompt_shown', { prompt_id: 'x"]) , .y' })).code).toBe('bad_request');
  });

  it('withdraws the buttons of an open prompt only', async () => {
    const withdrawn: [string, string][] = [];
    nb.withdrawPrompt = (id, outcome) => {
      withdrawn.push([id, outcome]);
      return id === 'p1';
    };
    expect(await ok('withdraw_prompt', { prompt_id: 'p1', outcome: 'Allowed once' })).toEqual({ removed: true });
    expect(await ok('withdraw_prompt', { prompt_id: 'p2', outcome: '' })).toEqual({ removed: false });
    expect(withdrawn).toEqual([
      ['p1', 'Allowed once'],
      ['p2', '']
    ]);
  });
});
