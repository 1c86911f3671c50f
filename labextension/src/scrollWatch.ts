/**
 * Whether the person scrolled the notebook since the run began: then a staged change does not
 * scroll the page away from where they are reading (a notice offers to go there instead).
 *
 * A run begins when a cell of the notebook is scheduled to run (the `%agent` cell). The person
 * scrolls with the wheel, a touch, the keys that move the view, or the scrollbar; the page's own
 * scrolling (to a change, to the active cell) fires none of these, so it is not taken for theirs.
 */
import type { Notebook, NotebookPanel } from '@jupyterlab/notebook';

/** NotebookActions.executionScheduled (passed in, so that this file loads without JupyterLab). */
export type Scheduled = {
  connect(slot: (sender: unknown, args: { notebook: Notebook }) => void): unknown;
};

const SCROLL_KEYS = new Set(['PageUp', 'PageDown', 'Home', 'End', 'ArrowUp', 'ArrowDown']);

/** Whether a scroll at `scrolledAt` came after the run that began at `runBegan` (ms; null: never). */
export function scrolledSince(scrolledAt: number | null, runBegan: number | null): boolean {
  return scrolledAt !== null && runBegan !== null && scrolledAt >= runBegan;
}

export class ScrollWatch {
  private scrolledAt: number | null = null;
  private runBegan: number | null = null;

  constructor(panel: NotebookPanel, scheduled: Scheduled) {
    const node = panel.content.node;
    const mark = () => {
      this.scrolledAt = performance.now();
    };
    node.addEventListener('wheel', mark, { passive: true });
    node.addEventListener('touchmove', mark, { passive: true });
    node.addEventListener('keydown', event => {
      const target = event.target as HTMLElement | null;
      const typing = target?.closest('.cm-editor, input, textarea'); // keys that move a cursor, not the view
      if (SCROLL_KEYS.has(event.key) && !typing) {
        mark();
      }
    });
    node.addEventListener('mousedown', event => {
      // On the scroll area itself, not a cell in it: the scrollbar.
      const target = event.target as HTMLElement | null;
      if (target && target.classList.contains('jp-WindowedPanel-outer')) {
        mark();
      }
    });
    scheduled.connect((_, { notebook }) => {
      if (notebook === panel.content) {
        this.runBegan = performance.now();
      }
    });
  }

  /** Whether the person scrolled since the last cell of this notebook was scheduled to run. */
  get personScrolled(): boolean {
    return scrolledSince(this.scrolledAt, this.runBegan);
  }
}
