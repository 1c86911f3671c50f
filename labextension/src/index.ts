/**
 * ipy_agent's front-end half of the live-notebook bridge.
 *
 * The agent runs inside the kernel. To see and change the notebook the person has open (with
 * its unsaved edits), it talks to this extension over a kernel comm with the target
 * `ipy_agent.notebook`. Every notebook panel registers the target on its kernel connection.
 * A kernel may be shared (two notebooks, a notebook and a console), and a comm the kernel opens
 * reaches every connection, so each panel says hello with its path and answers only requests
 * addressed to that path.
 *
 * Messages (protocol version PROTOCOL, checked on both sides):
 *   kernel -> front end: {protocol, request_id, op, path, args}
 *   front end -> kernel: {protocol, reply_to, ok, result | error, code}
 *                        {protocol, event: "hello", path, server_root, extension_version}
 * Results live under `result`, so a field of a cell (its `id`) never collides with protocol
 * keys (`request_id`, `reply_to`).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import * as nbformat from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

const TARGET = 'ipy_agent.notebook';
const PROTOCOL = 1;
const VERSION = '0.1.0';

type Args = { [key: string]: any };
type Request = { protocol?: number; request_id?: string; op?: string; path?: string | null; args?: Args };

/** An error with a code the kernel side can act on (not_found, stale, bad_request, ...). */
class BridgeError extends Error {
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message);
  }
}

function outputSize(output: nbformat.IOutput): number {
  return JSON.stringify(output).length;
}

function summariseOutputs(outputs: nbformat.IOutput[]): Args[] {
  return outputs.map(o => {
    const summary: Args = { output_type: o.output_type, size: outputSize(o) };
    if (o.output_type === 'stream') {
      summary.name = (o as nbformat.IStream).name;
    } else if (o.output_type === 'error') {
      summary.ename = (o as nbformat.IError).ename;
    } else if ('data' in o) {
      summary.mime_types = Object.keys((o as nbformat.IDisplayData).data || {});
    }
    return summary;
  });
}

function cellJSON(panel: NotebookPanel, index: number, withOutputs: boolean): Args {
  const cell = panel.model!.sharedModel.cells[index];
  const json = cell.toJSON() as Args;
  const outputs: nbformat.IOutput[] = (json.outputs as nbformat.IOutput[]) || [];
  const result: Args = {
    id: cell.id,
    index,
    cell_type: cell.cell_type,
    source: cell.getSource(),
    execution_count: cell.cell_type === 'code' ? (json.execution_count ?? null) : null,
    output_count: outputs.length,
    outputs_size: outputs.reduce((n, o) => n + outputSize(o), 0)
  };
  if (withOutputs) {
    result.outputs = outputs;
  } else {
    result.output_summary = summariseOutputs(outputs);
  }
  return result;
}

function findIndex(panel: NotebookPanel, cellId: unknown): number {
  if (typeof cellId !== 'string' || !cellId) {
    throw new BridgeError('bad_request', `cell_id must be a non-empty string, not ${JSON.stringify(cellId)}`);
  }
  const cells = panel.model!.sharedModel.cells;
  for (let i = 0; i < cells.length; i++) {
    if (cells[i].id === cellId) {
      return i;
    }
  }
  throw new BridgeError('not_found', `no cell with id ${JSON.stringify(cellId)} in ${panel.context.path}`);
}

/** Compare-and-set: refuse when the cell's source is no longer what the kernel last saw. */
function checkSource(panel: NotebookPanel, index: number, expected: unknown): void {
  if (typeof expected === 'string' && panel.model!.sharedModel.cells[index].getSource() !== expected) {
    throw new BridgeError('stale', 'the cell changed since the agent read it');
  }
}

function cellType(value: unknown): 'code' | 'markdown' | 'raw' {
  if (value === 'code' || value === 'markdown' || value === 'raw') {
    return value;
  }
  throw new BridgeError('bad_request', `cell_type must be code, markdown or raw, not ${JSON.stringify(value)}`);
}

const NOTIFY_TYPES = ['default', 'info', 'success', 'warning', 'error', 'in-progress'];

async function handle(panel: NotebookPanel, op: string, args: Args): Promise<Args> {
  const model = panel.model;
  if (!model) {
    throw new BridgeError('not_ready', 'the notebook is not loaded yet');
  }
  const nb = model.sharedModel;
  switch (op) {
    case 'list_cells':
      return {
        path: panel.context.path,
        dirty: model.dirty,
        cells: nb.cells.map((_, i) => cellJSON(panel, i, false))
      };
    case 'read_cells': {
      const ids: unknown = args.cell_ids;
      const indices = Array.isArray(ids) ? ids.map(id => findIndex(panel, id)) : nb.cells.map((_, i) => i);
      return { path: panel.context.path, cells: indices.map(i => cellJSON(panel, i, true)) };
    }
    case 'replace_source': {
      const index = findIndex(panel, args.cell_id);
      checkSource(panel, index, args.expected_source);
      const cell = nb.cells[index];
      const wanted = args.cell_type ? cellType(args.cell_type) : cell.cell_type;
      const source = String(args.source ?? '');
      if (wanted !== cell.cell_type) {
        // A cell cannot change type in place: replace it by one of the new type, same id.
        const old = cell.toJSON();
        nb.transact(() => {
          nb.deleteCell(index);
          nb.insertCell(index, { id: old.id as string, cell_type: wanted, source, metadata: old.metadata });
        });
      } else {
        nb.transact(() => {
          cell.setSource(source);
          if (cell.cell_type === 'code' && args.clear_outputs !== false) {
            const codeCell = model.cells.get(index) as any;
            codeCell.outputs.clear();
            codeCell.executionCount = null;
          }
        });
      }
      return { cell: cellJSON(panel, index, false) };
    }
    case 'insert_cell': {
      const index = args.after_id ? findIndex(panel, args.after_id) + 1 : 0;
      nb.insertCell(index, { cell_type: cellType(args.cell_type ?? 'code'), source: String(args.source ?? '') });
      return { cell: cellJSON(panel, index, false) };
    }
    case 'delete_cell': {
      const index = findIndex(panel, args.cell_id);
      checkSource(panel, index, args.expected_source);
      const gone = cellJSON(panel, index, false);
      nb.deleteCell(index);
      return { cell: gone, cell_count: nb.cells.length };
    }
    case 'set_outputs': {
      const index = findIndex(panel, args.cell_id);
      const cell = model.cells.get(index) as any;
      if (cell.type !== 'code') {
        throw new BridgeError('bad_request', `cell ${args.cell_id} is a ${cell.type} cell; only code cells have outputs`);
      }
      const outputs: nbformat.IOutput[] = Array.isArray(args.outputs) ? args.outputs : [];
      cell.outputs.clear();
      for (const output of outputs) {
        cell.outputs.add(output);
      }
      if ('execution_count' in args) {
        cell.executionCount = args.execution_count ?? null;
      }
      return { cell: cellJSON(panel, index, false) };
    }
    case 'scroll_to': {
      const index = findIndex(panel, args.cell_id);
      panel.content.activeCellIndex = index;
      await panel.content.scrollToItem(index, 'smart');
      return { index };
    }
    case 'notify': {
      const type = NOTIFY_TYPES.includes(args.type) ? args.type : 'info';
      const id = Notification.emit(String(args.message ?? ''), type, {
        autoClose: typeof args.auto_close === 'number' ? args.auto_close : 8000
      });
      return { notification_id: id };
    }
    default:
      throw new BridgeError('unknown_op', `unknown op ${JSON.stringify(op)}`);
  }
}

function hello(panel: NotebookPanel): Args {
  return {
    protocol: PROTOCOL,
    event: 'hello',
    path: panel.context.path,
    server_root: PageConfig.getOption('serverRoot'),
    extension_version: VERSION
  };
}

/** Serve one comm for one panel: answer requests addressed to its path, say hello first. */
function serve(panel: NotebookPanel, comm: Kernel.IComm, opening: boolean): void {
  comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
    const req = msg.content.data as unknown as Request;
    if (req.path && req.path !== panel.context.path) {
      return; // addressed to another panel on this kernel
    }
    if (!req.request_id) {
      return;
    }
    const base = { protocol: PROTOCOL, reply_to: req.request_id };
    if (req.protocol !== PROTOCOL) {
      comm.send({
        ...base,
        ok: false,
        code: 'version_mismatch',
        error:
          `protocol mismatch: the kernel speaks version ${req.protocol}, this JupyterLab extension ` +
          `(ipy-agent-notebook ${VERSION}) speaks version ${PROTOCOL}; install the same ipy_agent ` +
          'version in the kernel and the server, then reload the page'
      } as any);
      return;
    }
    handle(panel, String(req.op), req.args || {})
      .then(result => ({ ...base, ok: true, result }))
      .catch(err => ({
        ...base,
        ok: false,
        code: err instanceof BridgeError ? err.code : 'error',
        error: String(err?.message ?? err)
      }))
      .then(reply => comm.send(reply as any));
  };
  if (opening) {
    comm.open(hello(panel) as any);
  } else {
    comm.send(hello(panel) as any);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ipy-agent-notebook:plugin',
  description: 'Lets ipy_agent in the kernel read and edit the live notebook',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const watch = (panel: NotebookPanel) => {
      const register = async () => {
        await panel.context.ready;
        const kernel = panel.sessionContext.session?.kernel;
        if (!kernel || kernel.isDisposed) {
          return;
        }
        // Registering again replaces the handler: idempotent across restarts and re-checks.
        kernel.registerCommTarget(TARGET, (comm: Kernel.IComm, _open: KernelMessage.ICommOpenMsg) =>
          serve(panel, comm, false)
        );
        // After a page reload the kernel may already run the bridge, which would never learn of
        // this page: when it has comms open on the target, open a fresh one and say hello.
        try {
          const info = await kernel.requestCommInfo({ target_name: TARGET });
          const comms = (info.content as any).comms || {};
          if (info.content.status === 'ok' && Object.keys(comms).length > 0) {
            serve(panel, kernel.createComm(TARGET), true);
          }
        } catch (err) {
          console.debug('ipy-agent-notebook: comm info request failed', err);
        }
      };
      const onKernel = () => void register();
      panel.sessionContext.kernelChanged.connect(onKernel);
      panel.sessionContext.statusChanged.connect((_, status) => {
        if (status === 'restarting' || status === 'autorestarting') {
          // The kernel process is new after a restart: register once it is back.
          void panel.sessionContext.ready.then(onKernel);
        }
      });
      void panel.sessionContext.ready.then(onKernel);
    };
    tracker.widgetAdded.connect((_, panel) => watch(panel));
    tracker.forEach(panel => watch(panel));
    console.log(`ipy-agent-notebook ${VERSION} activated (protocol ${PROTOCOL})`);
  }
};

export default plugin;
