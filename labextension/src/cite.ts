/**
 * A `[cell N]` the model cites in its answer, as a link that goes to cell N of the notebook.
 *
 * The kernel renders the citation (ipy_agent/ui/citations.py) as
 * `<a class="ipy-agent-cite" href="#ipy-agent-cell-N" data-ipy-agent-cell="N">cell N</a>`, in the
 * live view and in the saved record alike. A click on it inside a notebook panel makes cell N
 * (1-based, as the page numbers cells) active and scrolls to it; nothing goes to the kernel, so a
 * record reopened without one still links. The href carries N too, for a page whose sanitizer
 * dropped the data attribute. A click elsewhere, or on a cell that no longer exists, is left
 * alone (a cell beyond the end goes to the last cell).
 */

/** The attribute and the href the kernel writes (ipy_agent/ui/citations.py). */
export const CITE_ATTRIBUTE = 'data-ipy-agent-cell';
const CITE_HREF = /#ipy-agent-cell-(\d+)$/;

/** What of a DOM element the handler reads (an Element, or a stand-in in the tests). */
export interface CiteTarget {
  closest(selector: string): CiteTarget | null;
  getAttribute(name: string): string | null;
}

/** What of a click the handler reads and stops. */
export interface CiteClick {
  target: unknown;
  button?: number;
  ctrlKey?: boolean;
  metaKey?: boolean;
  shiftKey?: boolean;
  preventDefault(): void;
  stopPropagation(): void;
}

/** The notebook the citation's panel shows: its cell count, and how it goes to a cell (0-based). */
export interface CitedNotebook {
  cellCount(): number;
  scrollTo(index: number): Promise<void> | void;
}

/** The 1-based cell a clicked element cites, or null when it is no citation. */
export function citedCell(target: unknown): number | null {
  const start = target as Partial<CiteTarget> | null;
  if (!start || typeof start.closest !== 'function') {
    return null;
  }
  const link = start.closest(`a[${CITE_ATTRIBUTE}], a.ipy-agent-cite`);
  if (!link) {
    return null;
  }
  const text = link.getAttribute(CITE_ATTRIBUTE) ?? CITE_HREF.exec(link.getAttribute('href') ?? '')?.[1] ?? '';
  if (!/^\d{1,5}$/.test(text)) {
    return null;
  }
  const n = Number(text);
  return n >= 1 ? n : null;
}

/**
 * Handle a click in a notebook panel: on a citation, go to its cell and keep the browser from
 * following the href. Returns the 0-based index gone to, or null when the click was left alone.
 */
export function onCitationClick(event: CiteClick, notebook: CitedNotebook): number | null {
  if ((event.button ?? 0) !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) {
    return null; // a middle click or a modified one: the person's own
  }
  const n = citedCell(event.target);
  if (n === null) {
    return null;
  }
  event.preventDefault();
  event.stopPropagation();
  const count = notebook.cellCount();
  if (count === 0) {
    return null;
  }
  const index = Math.min(n, count) - 1;
  void notebook.scrollTo(index);
  return index;
}

/** Listen for citation clicks under `node` (a notebook panel's); returns how to stop listening. */
export function watchCitations(
  node: {
    addEventListener: (type: 'click', fn: (e: MouseEvent) => void) => void;
    removeEventListener: (type: 'click', fn: (e: MouseEvent) => void) => void;
  },
  notebook: CitedNotebook
): () => void {
  const onClick = (event: MouseEvent) => void onCitationClick(event, notebook);
  node.addEventListener('click', onClick);
  return () => node.removeEventListener('click', onClick);
}
