/**
 * Staged cell edits drawn in the notebook (the DOM half of review.ts).
 *
 * A proposal to replace or delete a cell is drawn inside that cell's own element (`.jp-Cell`):
 * the inline diff, Accept, Reject with a reason box, Accept all and Reject all. A proposed new
 * cell is a placeholder at its place, outside the notebook model (nothing is inserted until
 * Accept). A deletion also marks the cell. Events in a proposal stay there: the notebook does
 * not take a click or a key in it for its own (command mode, drag, focus).
 */
import { Notification } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { Decision, Outcome, Proposal, ReviewBoard, ReviewView, headline, lineDiff } from './review';

const STYLE_ID = 'ipy-agent-review-style';
const CSS = `
.ipy-agent-proposal { margin: 4px 0 4px var(--jp-cell-prompt-width, 64px); padding: 6px 8px;
  border: 1px solid rgba(208, 135, 0, 0.7); border-radius: 3px; background: var(--jp-layout-color1);
  font-size: var(--jp-ui-font-size1); }
.ipy-agent-proposal.ipy-agent-proposed-cell { border-style: dashed; }
.ipy-agent-proposal-head { font-weight: 600; margin-bottom: 4px; }
.ipy-agent-proposal pre { margin: 0 0 6px 0; padding: 4px; overflow-x: auto; max-height: 24em;
  font-family: var(--jp-code-font-family); font-size: var(--jp-code-font-size); }
.ipy-agent-diff-add { background: rgba(46, 160, 67, 0.2); }
.ipy-agent-diff-del { background: rgba(248, 81, 73, 0.2); text-decoration: line-through; }
.ipy-agent-proposal-actions { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.ipy-agent-proposal-actions input { flex: 1 1 14em; min-width: 10em; }
.ipy-agent-proposal-outcome { font-style: italic; opacity: 0.85; }
.jp-Cell.ipy-agent-proposed-delete > :not(.ipy-agent-proposal) { opacity: 0.5; text-decoration: line-through; }
.jp-Cell.ipy-agent-proposed-delete { outline: 2px dashed rgba(248, 81, 73, 0.7); }
`;
const KEPT_EVENTS = ['mousedown', 'dblclick', 'keydown', 'keypress', 'keyup', 'focusin', 'contextmenu'];
/** How long a settled proposal shows its outcome ("Accepted") before its banner leaves the cell. */
export const SETTLED_MS = 1500;

/**
 * Keys typed into a proposal's reason box are the box's: Notebook 7 runs its shortcuts on the
 * document's capture phase, before any element can stop a key, and a shortcut took the person's
 * reason ("k" moved to the cell above). Stopped at the window's capture phase, the key still types.
 */
function keepTypedKeys(event: KeyboardEvent): void {
  const target = event.target;
  if (target instanceof HTMLInputElement && target.closest('.ipy-agent-proposal')) {
    event.stopPropagation();
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

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text = ''): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

function diffBlock(proposal: Proposal): HTMLElement {
  const pre = element('pre', 'ipy-agent-proposal-diff');
  const lines =
    proposal.kind === 'insert'
      ? lineDiff('', proposal.source)
      : proposal.kind === 'delete'
        ? lineDiff(proposal.oldSource, '')
        : lineDiff(proposal.oldSource, proposal.source);
  for (const line of lines) {
    const cls = line.op === '+' ? 'ipy-agent-diff-add' : line.op === '-' ? 'ipy-agent-diff-del' : '';
    pre.appendChild(element('div', cls, `${line.op} ${line.text}`));
  }
  return pre;
}

/** The proposals of one notebook panel, drawn in its cells. */
export class DomReviewView implements ReviewView {
  board: ReviewBoard | null = null;
  private readonly boxes = new Map<string, HTMLElement>();

  constructor(private readonly panel: NotebookPanel) {}

  private cellNode(id: string | null): HTMLElement | null {
    const cell = this.panel.content.widgets.find(w => w.model.id === id);
    return cell ? cell.node : null;
  }

  private decide(proposal: Proposal, decision: Decision, reason: string): void {
    this.board?.decide(proposal.id, decision, reason);
  }

  show(proposal: Proposal): void {
    ensureStyle();
    this.boxes.get(proposal.id)?.remove();
    const box = element('div', 'ipy-agent-proposal');
    box.dataset.proposalId = proposal.id;
    box.dataset.kind = proposal.kind;
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', headline(proposal));
    for (const type of KEPT_EVENTS) {
      box.addEventListener(type, event => event.stopPropagation());
    }
    box.addEventListener('focusin', () => this.activate(proposal));
    box.appendChild(element('div', 'ipy-agent-proposal-head', headline(proposal)));
    box.appendChild(diffBlock(proposal));
    const actions = element('div', 'ipy-agent-proposal-actions');
    const reason = element('input');
    reason.type = 'text';
    reason.placeholder = 'Reason for rejecting (optional, sent to the agent)';
    reason.setAttribute('aria-label', 'Reason for rejecting');
    const button = (label: string, title: string, decision: Decision) => {
      const b = element('button', 'jp-Button jp-mod-styled', label);
      b.type = 'button';
      b.title = title;
      b.addEventListener('click', () => this.decide(proposal, decision, reason.value));
      return b;
    };
    actions.append(
      button('Accept', 'Apply this change to the notebook', 'accept'),
      button('Reject', 'Leave the cell as it is; the reason goes to the agent', 'reject'),
      reason,
      button('Accept all', 'Accept this and every other change the agent proposes in this run', 'accept_all'),
      button('Reject all', 'Reject this and every other change the agent proposes in this run', 'reject_all')
    );
    box.appendChild(actions);
    box.appendChild(element('div', 'ipy-agent-proposal-outcome'));
    box.lastElementChild!.setAttribute('role', 'status');
    this.place(proposal, box);
    this.boxes.set(proposal.id, box);
  }

  /**
   * Where the box goes: inside the cell it changes; a new cell's placeholder at the bottom of the
   * cell it follows (or the top of the first cell). Inside a cell, not beside it: the notebook
   * gives the keyboard back to its active cell unless the focus is in that cell's element.
   */
  private place(proposal: Proposal, box: HTMLElement): void {
    const cell = this.cellNode(proposal.cellId);
    if (proposal.kind !== 'insert') {
      cell?.classList.toggle('ipy-agent-proposed-delete', proposal.kind === 'delete');
      (cell ?? this.panel.content.node).appendChild(box);
      return;
    }
    box.classList.add('ipy-agent-proposed-cell');
    const first = this.panel.content.widgets[0]?.node;
    if (cell) {
      cell.appendChild(box);
    } else if (first) {
      first.prepend(box);
    } else {
      this.panel.content.node.appendChild(box);
    }
  }

  /** The person is in a proposal: its cell becomes the active one, so the notebook leaves the focus there. */
  private activate(proposal: Proposal): void {
    const id = proposal.cellId ?? this.panel.content.widgets[0]?.model.id;
    const index = this.panel.content.widgets.findIndex(w => w.model.id === id);
    if (index >= 0 && this.panel.content.activeCellIndex !== index) {
      this.panel.content.activeCellIndex = index;
    }
  }

  /**
   * Bring the proposal into view. The notebook may not render a cell far from view (its
   * windowing modes), so the notebook scrolls to the cell by its index first; then the box, now
   * in the page, is scrolled to within it.
   */
  reveal(proposal: Proposal): void {
    void this.goTo(proposal);
  }

  async goTo(proposal: Proposal): Promise<void> {
    const content = this.panel.content;
    const id = proposal.cellId ?? content.widgets[0]?.model.id;
    const index = content.widgets.findIndex(w => w.model.id === id);
    if (index >= 0) {
      try {
        await content.scrollToItem(index, 'smart');
      } catch {
        // another scroll was asked meanwhile (the person's Next): it takes over
        return;
      }
    }
    const box = this.boxes.get(proposal.id);
    if (box?.isConnected) {
      box.scrollIntoView({ block: 'nearest' });
    }
  }

  offer(proposal: Proposal): void {
    Notification.emit(headline(proposal), 'info', {
      autoClose: 15000,
      actions: [{ label: 'Go to it', caption: 'Scroll to the change to review', callback: () => this.reveal(proposal) }]
    });
  }

  busy(proposal: Proposal, on: boolean): void {
    const box = this.boxes.get(proposal.id);
    box?.querySelectorAll('button, input').forEach(node => {
      (node as HTMLButtonElement | HTMLInputElement).disabled = on;
    });
  }

  settle(proposal: Proposal, outcome: Outcome, text: string): void {
    const box = this.boxes.get(proposal.id);
    this.cellNode(proposal.cellId)?.classList.remove('ipy-agent-proposed-delete');
    if (!box) {
      return;
    }
    box.dataset.outcome = outcome;
    box.querySelector('.ipy-agent-proposal-diff')?.remove();
    box.querySelector('.ipy-agent-proposal-actions')?.remove();
    const line = box.querySelector('.ipy-agent-proposal-outcome');
    if (line) {
      line.textContent = text;
    }
    window.setTimeout(() => {
      if (this.boxes.get(proposal.id) === box) {
        box.remove();
        this.boxes.delete(proposal.id);
      }
    }, SETTLED_MS);
  }
}
