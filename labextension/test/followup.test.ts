/**
 * The reply box under a finished run: which cell gets it, and the cell a reply becomes.
 */
import { describe, expect, it } from 'vitest';
import { CellState, followupIndex, followupSource, hasRecord, isAgentCell } from '../src/followup';

const RECORD = { output_type: 'display_data', data: { 'text/html': '<div class="ipy-agent-record">Done.</div>' } };
const LIVE = { output_type: 'display_data', data: { 'text/plain': 'ipy_agent run in progress' } };

function cell(source: string, outputs: unknown[] = [], running = false, cellType = 'code'): CellState {
  return { cellType, source, outputs, running };
}

describe('followupIndex', () => {
  it('is the last %agent cell once it shows its record', () => {
    const cells = [cell('%load_ext ipy_agent'), cell('%agent go', [RECORD]), cell('x = 1')];
    expect(followupIndex(cells)).toBe(1);
    cells.push(cell('%%agent --mode plan\nmore', [RECORD]));
    expect(followupIndex(cells)).toBe(3); // one box: under the newest run
  });

  it('is none while the last run is going, nor under an older record then', () => {
    expect(followupIndex([cell('%agent go', [RECORD]), cell('%agent more', [LIVE], true)])).toBe(-1);
    expect(followupIndex([cell('%agent go', [RECORD]), cell('%agent more', [RECORD], true)])).toBe(-1);
    expect(followupIndex([cell('%agent go', [RECORD]), cell('%agent more')])).toBe(-1); // not run yet
  });

  it('is none without an %agent cell', () => {
    expect(followupIndex([cell('print(1)', [RECORD]), cell('%agent go', [RECORD], false, 'markdown')])).toBe(-1);
    expect(followupIndex([])).toBe(-1);
  });
});

describe('isAgentCell and hasRecord read the cell as the kernel does', () => {
  it.each([
    ['%agent go', true],
    ['x = 1\n%agent go', true],
    ['%%agent\ngo', true],
    ['%agent', true],
    ['  %agent go', false],
    ['%agent_rewind', false],
    ['%agent_inspect 1', false],
    ['print("%agent")', false]
  ])('%j runs the agent: %s', (source, expected) => {
    expect(isAgentCell(cell(source))).toBe(expected);
  });

  it('finds the record in HTML given as a list of lines', () => {
    expect(hasRecord([{ data: { 'text/html': ['<div class="ipy-agent-record">', 'x</div>'] } }])).toBe(true);
    expect(hasRecord([LIVE, { output_type: 'stream', text: 'class="ipy-agent-record"' }])).toBe(false);
  });
});

describe('followupSource', () => {
  it('is a %agent line with the reply', () => {
    expect(followupSource('  now plot it  ')).toBe('%agent now plot it');
    expect(followupSource('why is $x {y}?')).toBe('%agent why is $x {y}?');
    expect(followupSource('   ')).toBe('');
  });

  it('is a %%agent cell when a line would not carry the reply as typed', () => {
    expect(followupSource('--new is not an option here')).toBe('%%agent\n--new is not an option here');
    expect(followupSource('ends with \\')).toBe('%%agent\nends with \\');
    expect(followupSource('two\nlines')).toBe('%%agent\ntwo\nlines');
  });
});
