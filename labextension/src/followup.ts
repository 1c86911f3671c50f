/**
 * Keep going from a finished run: which `%agent` cell gets the reply box, and the cell a reply
 * becomes. Pure (unit-tested in test/followup.test.ts); followupView.ts draws the box.
 *
 * A run's record (ipy_agent/ui/record.py) replaces its live view in the `%agent` cell's output
 * when the run ends: HTML in `<div class="ipy-agent-record">`. The box goes under the last
 * `%agent` cell of the notebook once that cell shows its record and is no longer running: a reply
 * continues the kernel's one conversation, which is where that cell left it (a box under an older
 * cell would suggest going back to its point). The reply is a new cell below, `%agent <text>`,
 * which continues the same conversation as any `%agent` line does.
 */

export const FOLLOWUP_CLASS = 'ipy-agent-followup';
export const RECORD_CLASS = 'ipy-agent-record';

/** What the box needs to know of a cell. */
export interface CellState {
  cellType: string;
  source: string;
  outputs: readonly unknown[]; // nbformat outputs
  running: boolean;
}

// As the kernel's transformer (magics/cell_runner.py) reads a cell: `%%agent` on its first line,
// or an unindented `%agent` line.
const CELL_MAGIC = /^%%agent(?:[ \t\r\n]|$)/;
const LINE_MAGIC = /^%agent(?:[ \t]|$)/m;

/** Does the cell run the agent? */
export function isAgentCell(cell: CellState): boolean {
  return cell.cellType === 'code' && (CELL_MAGIC.test(cell.source) || LINE_MAGIC.test(cell.source));
}

function htmlOf(output: unknown): string {
  const data = typeof output === 'object' && output !== null ? (output as { data?: unknown }).data : undefined;
  const value = typeof data === 'object' && data !== null ? (data as Record<string, unknown>)['text/html'] : undefined;
  if (Array.isArray(value)) {
    return value.filter(v => typeof v === 'string').join('');
  }
  return typeof value === 'string' ? value : '';
}

/** Does the cell show a finished run's record? */
export function hasRecord(outputs: readonly unknown[]): boolean {
  return outputs.some(o => htmlOf(o).includes(`class="${RECORD_CLASS}"`));
}

/** The index of the cell that gets the reply box, or -1: the last `%agent` cell, once finished. */
export function followupIndex(cells: readonly CellState[]): number {
  for (let i = cells.length - 1; i >= 0; i--) {
    if (isAgentCell(cells[i])) {
      return !cells[i].running && hasRecord(cells[i].outputs) ? i : -1;
    }
  }
  return -1;
}

/**
 * The source of the cell a reply becomes; '' for a blank reply. `%agent <text>`, unless the line
 * would not carry the text as typed (it starts with `-`, an option; it ends with `\`, a
 * continuation; it has several lines): then a `%%agent` cell with the text as its body.
 */
export function followupSource(text: string): string {
  const reply = text.trim();
  if (!reply) {
    return '';
  }
  if (reply.startsWith('-') || reply.endsWith('\\') || reply.includes('\n')) {
    return `%%agent\n${reply}`;
  }
  return `%agent ${reply}`;
}
