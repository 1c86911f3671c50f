/**
 * The reply box under a finished `%agent` run (which cell, and what a reply becomes: followup.ts).
 *
 * Typing a reply and pressing Enter (or Send) inserts a code cell below the `%agent` cell with
 * the reply and runs it, as Shift+Enter would; the box then waits under that new cell for its
 * run to finish. The box is drawn inside the cell's own element, like a staged change
 * (reviewView.ts): the notebook leaves the keyboard there, and keys typed in it are text, not
 * notebook shortcuts.
 */
import type { Cell, ICodeCellModel } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { CellState, FOLLOWUP_CLASS, followupIndex, followupSource } from './followup';

const STYLE_ID = 'ipy-agent-followup-style';
const CSS = `
.${FOLLOWUP_CLASS} { display: flex; gap: 6px; align-items: center;
  margin: 4px 0 4px var(--jp-cell-prompt-width, 64px); font-size: var(--jp-ui-font-size1); }
.${FOLLOWUP_CLASS} input { flex: 1 1 20em; min-width: 10em; padding: 3px 6px; }
`;
const KEPT_EVENTS = ['mousedown', 'dblclick', 'keypress', 'contextmenu'];

/**
 * Keys typed into a reply box are the box's: Notebook 7 runs its shortcuts on the document's
 * capture phase, so the key is stopped at the window's (it still types), and Enter sends.
 */
function keepTypedKeys(event: KeyboardEvent): void {
  const target = event.target;
  if (!(target instanceof HTMLInputElement) || !target.closest(`.${FOLLOWUP_CLASS}`)) {
    return;
  }
  event.stopPropagation();
  if (event.type === 'keydown' && event.key === 'Enter' && !event.isComposing) {
    event.preventDefault();
    target.dispatchEvent(new CustomEvent('ipy-agent-send'));
  }
}

function ensureStyle(): void {
  if (!document.getElementById(STYLE_ID)) {
    window.addEventListener('keydown', keepTypedKeys, true);
    window.addEventListener('keyup', keepTypedKeys, true);
    const style = document.createElement('style');
    style.id = STYLE_ID;
    style.textContent = CSS;
    document.head.appendChild(style);
  }
}

function state(cell: Cell): CellState {
  const model = cell.model;
  const code = model.type === 'code' ? (model as ICodeCellModel) : null;
  return {
    cellType: model.type,
    source: model.sharedModel.getSource(),
    outputs: code ? code.outputs.toJSON() : [],
    running: code?.executionState === 'running'
  };
}

/** The box: a text field and Send; `send(text)` is called with a non-blank reply. */
function drawBox(send: (text: string) => void, activate: () => void): HTMLElement {
  ensureStyle();
  const box = document.createElement('div');
  box.className = FOLLOWUP_CLASS;
  box.setAttribute('role', 'group');
  box.setAttribute('aria-label', 'Reply to the agent');
  for (const type of KEPT_EVENTS) {
    box.addEventListener(type, event => event.stopPropagation());
  }
  box.addEventListener('focusin', activate);
  const input = document.createElement('input');
  input.type = 'text';
  input.placeholder = 'Reply to the agent: Enter runs it in a new %agent cell below';
  input.setAttribute('aria-label', 'Reply to the agent');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'jp-Button jp-mod-styled jp-mod-accept';
  button.textContent = 'Send';
  button.title = 'Continue the conversation: a new %agent cell below, run at once';
  const submit = () => {
    if (followupSource(input.value)) {
      send(input.value);
      input.value = '';
    }
  };
  input.addEventListener('ipy-agent-send', submit);
  button.addEventListener('click', submit);
  box.append(input, button);
  return box;
}

/** Keep the reply box under the notebook's finished `%agent` run, and only there. */
export function watchFollowup(panel: NotebookPanel): void {
  let box: HTMLElement | null = null;
  let host: Cell | null = null;
  const send = (index: number, text: string) => {
    const model = panel.model;
    if (!model || index < 0) {
      return; // the notebook closed, or the %agent cell was deleted
    }
    model.sharedModel.insertCell(index + 1, { cell_type: 'code', source: followupSource(text) });
    panel.content.activeCellIndex = index + 1;
    panel.content.deselectAll(); // the new cell alone runs: it stays active
    panel.content.mode = 'command';
    void NotebookActions.run(panel.content, panel.sessionContext);
  };
  const update = () => {
    const cells = panel.content.widgets;
    const index = followupIndex(cells.map(state));
    const cell = index >= 0 ? cells[index] : null;
    if (cell === host && box?.parentElement === cell?.node) {
      return; // where it is: what is typed stays
    }
    box?.remove();
    box = null;
    host = cell;
    if (cell) {
      const activate = () => {
        const at = panel.content.widgets.indexOf(cell);
        if (at >= 0 && panel.content.activeCellIndex !== at) {
          panel.content.activeCellIndex = at;
        }
      };
      box = drawBox(text => send(panel.content.widgets.indexOf(cell), text), activate);
      cell.node.appendChild(box);
    }
  };
  // What can move the box: cells come and go, a cell's source, outputs or running state change.
  let queued = false;
  const schedule = () => {
    if (!queued) {
      queued = true;
      void Promise.resolve().then(() => {
        queued = false;
        update();
      });
    }
  };
  const watched = new WeakSet<object>();
  const watchCells = () => {
    for (const cell of panel.content.widgets) {
      const model = cell.model;
      if (watched.has(model)) {
        continue;
      }
      watched.add(model);
      model.contentChanged.connect(schedule);
      model.stateChanged.connect(schedule);
      if (model.type === 'code') {
        (model as ICodeCellModel).outputs.changed.connect(schedule);
      }
    }
    schedule();
  };
  void panel.context.ready.then(() => {
    watchCells();
    panel.model?.cells.changed.connect(watchCells);
  });
}
