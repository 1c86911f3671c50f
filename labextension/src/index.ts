/**
 * ipy_agent's front-end half of the live-notebook bridge: the JupyterLab plugin.
 *
 * The agent runs inside the kernel. To see and change the notebook the person has open (with
 * its unsaved edits), it talks to this extension over a kernel comm (target TARGET). Every
 * notebook panel registers the target on its kernel connection. A kernel may be shared (two
 * notebooks, a notebook and a console), and a comm the kernel opens reaches every connection, so
 * each panel says hello with its path and answers only requests addressed to that path.
 *
 * This file wires panels and comms; what a request does, and what the reply says, is in
 * handler.ts (pure, unit-tested), and the protocol itself in ipy_agent/notebook/protocol.json.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { ICodeCellModel } from '@jupyterlab/cells';
import { PageConfig } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { CellData, CellType, Notebook, PROTOCOL, TARGET, VERSION, hello, reply } from './handler';
import { drawPrompt, promptShown, withdrawPrompt } from './fallback';
import { ReviewBoard } from './review';
import { ReviewBar } from './reviewBar';
import { DomReviewView } from './reviewView';
import { watchPolicies } from './policyBadge';
import { watchFollowup } from './followupView';
import { ScrollWatch } from './scrollWatch';
import { watchCitations } from './cite';

/** The comm a panel last heard the kernel on: where the person's decisions go (review.ts). */
type Link = { comm: Kernel.IComm | null };

/**
 * The panel's staged proposals, drawn in its cells, watched for the person's typing (the stale
 * rule), counted in the review bar; they end when the run's cell finishes.
 */
function panelReview(panel: NotebookPanel, link: Link): ReviewBoard {
  const view = new DomReviewView(panel);
  const board = new ReviewBoard(
    view,
    message => {
      const comm = link.comm;
      if (!comm || comm.isDisposed) {
        return false;
      }
      comm.send(message as CommData);
      return true;
    },
    () => panel.context.path
  );
  view.board = board;
  new ReviewBar(panel, board, proposal => view.reveal(proposal));
  NotebookActions.executed.connect((_, { notebook }) => {
    if (notebook === panel.content) {
      board.endRun(); // a run's cell finished: no one waits for an answer to what is still open
    }
  });
  panel.sessionContext.statusChanged.connect((_, status) => {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      board.endRun(); // the run went with its kernel
    }
  });
  const check = () => {
    if (board.open.length === 0 || !panel.model) {
      return;
    }
    const sources = new Map(panel.model.sharedModel.cells.map(cell => [cell.id, cell.getSource()]));
    board.check(id => sources.get(id));
  };
  // A cell's typing changes its own shared model; the notebook's signals say when cells come and go.
  const watched = new WeakSet<object>();
  const watchCells = () => {
    for (const cell of panel.model?.sharedModel.cells ?? []) {
      if (!watched.has(cell)) {
        watched.add(cell);
        cell.changed.connect(check);
      }
    }
  };
  void panel.context.ready.then(() => {
    watchCells();
    panel.model?.sharedModel.changed.connect(() => {
      watchCells();
      check();
    });
  });
  return board;
}

/** The panel's notebook model, as the handler sees it. */
function panelNotebook(panel: NotebookPanel, review: ReviewBoard): Notebook {
  const model = () => panel.model!;
  const scrolling = new ScrollWatch(panel, NotebookActions.executionScheduled);
  const cells = () => model().sharedModel.cells;
  return {
    review,
    get path() {
      return panel.context.path;
    },
    get ready() {
      return panel.model !== null;
    },
    get dirty() {
      return model().dirty;
    },
    cellIds: () => cells().map(cell => cell.id),
    cell: (index: number): CellData => {
      const cell = cells()[index];
      const json = cell.toJSON();
      return {
        id: cell.id,
        cell_type: cell.cell_type as CellType,
        source: cell.getSource(),
        metadata: json.metadata,
        execution_count: (json.execution_count as number | null | undefined) ?? null,
        outputs: (json.outputs as CellData['outputs'] | undefined) ?? []
      };
    },
    transact: changes => model().sharedModel.transact(changes),
    insertCell: (index, cell) => void model().sharedModel.insertCell(index, cell),
    deleteCell: index => model().sharedModel.deleteCell(index),
    setSource: (index, source) => cells()[index].setSource(source),
    setOutputs: (index, outputs, executionCount) => {
      const cell = model().cells.get(index) as ICodeCellModel;
      cell.outputs.clear();
      for (const output of outputs) {
        cell.outputs.add(output);
      }
      if (executionCount !== undefined) {
        cell.executionCount = executionCount;
      }
    },
    scrollTo: async index => {
      panel.content.activeCellIndex = index;
      await panel.content.scrollToItem(index, 'smart');
    },
    personScrolled: () => scrolling.personScrolled,
    notify: (message, type, autoClose) => Notification.emit(message, type, { autoClose }),
    getMetadata: key => model().getMetadata(key),
    setMetadata: (key, value) => {
      if (value === undefined) {
        model().deleteMetadata(key);
      } else {
        model().setMetadata(key, value);
      }
    },
    promptShown: id => promptShown(panel.node, id),
    askPermission: request => {
      // Under the running cell; without its id, under the active one.
      const cell = panel.content.widgets.find(c => c.model.id === request.cell_id) ?? panel.content.activeCell;
      return drawPrompt(cell?.node ?? panel.content.node, request);
    },
    withdrawPrompt: (id, outcome) => withdrawPrompt(id, outcome)
  };
}

type CommData = Parameters<Kernel.IComm['send']>[0];

/** Serve one comm for one panel: say hello, answer the requests addressed to its path. */
function serve(nb: Notebook, comm: Kernel.IComm, opening: boolean, link: Link): void {
  link.comm = comm;
  comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
    link.comm = comm; // the newest comm the kernel speaks on
    void reply(nb, msg.content.data).then(answer => {
      if (answer) {
        comm.send(answer as CommData);
      }
    });
  };
  const greeting = hello(nb, PageConfig.getOption('serverRoot')) as CommData;
  if (opening) {
    comm.open(greeting);
  } else {
    comm.send(greeting);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ipy-agent-notebook:plugin',
  description: 'Lets ipy_agent in the kernel read and edit the live notebook',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const watch = (panel: NotebookPanel) => {
      const link: Link = { comm: null };
      const nb = panelNotebook(panel, panelReview(panel, link));
      watchPolicies(panel); // the badges of the person's cell policies
      watchFollowup(panel); // the reply box under a finished %agent run
      // A `[cell N]` link in the agent's answer goes to that cell (cite.ts).
      watchCitations(panel.node, { cellCount: () => panel.content.widgets.length, scrollTo: nb.scrollTo });
      const register = async () => {
        await panel.context.ready;
        const kernel = panel.sessionContext.session?.kernel;
        if (!kernel || kernel.isDisposed) {
          return;
        }
        // Registering again replaces the handler: idempotent across restarts and re-checks.
        kernel.registerCommTarget(TARGET, (comm: Kernel.IComm) => serve(nb, comm, false, link));
        // After a page reload the kernel may already run the bridge, which would never learn of
        // this page: when it has comms open on the target, open a fresh one and say hello.
        try {
          const info = (await kernel.requestCommInfo({ target_name: TARGET })).content;
          if (info.status === 'ok' && Object.keys(info.comms ?? {}).length > 0) {
            serve(nb, kernel.createComm(TARGET), true, link);
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
