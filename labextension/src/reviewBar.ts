/**
 * The review bar: while the agent's changes wait for an answer, a bar over the notebook says how
 * many ("2 changes to review"), with Previous and Next to go from one to the next (the notebook
 * scrolls to each, rendered or not) and Accept all / Reject all. It leaves when none waits.
 *
 * `barText` and `step` are the pure part (unit-tested); `ReviewBar` draws it over a notebook
 * panel (JupyterLab and Notebook 7) from a ReviewBoard's open proposals.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Proposal, ReviewBoard } from './review';

/** "1 change to review", "3 changes to review". */
export function barText(count: number): string {
  return `${count} ${count === 1 ? 'change' : 'changes'} to review`;
}

/**
 * The proposal to go to from `current` (an id, or null before any), `by` places on (+1 Next,
 * -1 Previous), round the ends; null when none is open. From no current proposal (or one that
 * is no longer open), Next goes to the first and Previous to the last.
 */
export function step(open: readonly string[], current: string | null, by: 1 | -1): string | null {
  if (open.length === 0) {
    return null;
  }
  const at = current === null ? -1 : open.indexOf(current);
  if (at < 0) {
    return by === 1 ? open[0] : open[open.length - 1];
  }
  return open[(at + by + open.length) % open.length];
}

const STYLE_ID = 'ipy-agent-review-bar-style';
const CSS = `
.ipy-agent-review-bar { position: absolute; top: 6px; right: 18px; z-index: 20; display: flex;
  gap: 6px; align-items: center; padding: 4px 8px; border: 1px solid rgba(208, 135, 0, 0.8);
  border-radius: 4px; background: var(--jp-layout-color1); box-shadow: var(--jp-elevation-z4);
  font-size: var(--jp-ui-font-size1); color: var(--jp-ui-font-color1); }
.ipy-agent-review-bar[hidden] { display: none; }
.ipy-agent-review-count { font-weight: 600; margin-right: 4px; }
`;

function ensureStyle(): void {
  if (!document.getElementById(STYLE_ID)) {
    const style = document.createElement('style');
    style.id = STYLE_ID;
    style.textContent = CSS;
    document.head.appendChild(style);
  }
}

/** Goes to a proposal: scrolls the notebook there (the review view knows how). */
export type GoTo = (proposal: Proposal) => void;

/** The bar over one notebook panel. */
export class ReviewBar {
  readonly node: HTMLElement;
  private readonly count: HTMLElement;
  private readonly buttons: HTMLButtonElement[];
  private current: string | null = null;

  constructor(
    private readonly panel: NotebookPanel,
    private readonly board: ReviewBoard,
    private readonly goTo: GoTo
  ) {
    ensureStyle();
    this.node = document.createElement('div');
    this.node.className = 'ipy-agent-review-bar';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Changes to review');
    this.node.hidden = true;
    // The notebook does not take a click in the bar for its own (command mode, drag).
    for (const type of ['mousedown', 'dblclick', 'contextmenu']) {
      this.node.addEventListener(type, event => event.stopPropagation());
    }
    this.count = document.createElement('span');
    this.count.className = 'ipy-agent-review-count';
    this.count.setAttribute('role', 'status');
    const button = (label: string, title: string, act: () => void) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'jp-Button jp-mod-styled';
      b.textContent = label;
      b.title = title;
      b.addEventListener('click', act);
      return b;
    };
    this.buttons = [
      button('Previous', 'Go to the previous change to review', () => this.move(-1)),
      button('Next', 'Go to the next change to review', () => this.move(1)),
      button('Accept all', 'Accept every change waiting here and the rest the agent proposes in this run', () =>
        this.answerAll('accept_all')
      ),
      button('Reject all', 'Reject every change waiting here and the rest the agent proposes in this run', () =>
        this.answerAll('reject_all')
      )
    ];
    this.node.append(this.count, ...this.buttons);
    board.onChange(() => this.update());
  }

  /** Put the bar over the notebook (once its widget is there). */
  attach(): void {
    if (!this.node.isConnected) {
      this.panel.content.node.appendChild(this.node);
    }
  }

  private update(): void {
    const open = this.board.open;
    this.attach();
    this.node.hidden = open.length === 0;
    this.count.textContent = barText(open.length);
    const waiting = open.filter(p => !this.board.pending(p.id));
    for (const b of this.buttons.slice(2)) {
      b.disabled = waiting.length === 0; // every answer is on its way to the kernel
    }
    if (open.length === 0) {
      this.current = null;
    } else if (this.current === null) {
      this.current = open[0].id; // the first change is where the page went: Next goes on from it
    }
  }

  private move(by: 1 | -1): void {
    const open = this.board.open;
    const id = step(
      open.map(p => p.id),
      this.current,
      by
    );
    const proposal = open.find(p => p.id === id);
    if (proposal) {
      this.current = proposal.id;
      this.goTo(proposal);
    }
  }

  private answerAll(decision: 'accept_all' | 'reject_all'): void {
    for (const proposal of this.board.open) {
      this.board.decide(proposal.id, decision);
    }
  }
}
