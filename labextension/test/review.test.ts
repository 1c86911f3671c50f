/**
 * The page's half of staged cell edits, without a browser: what a proposal is drawn from, the
 * inline diff, the decisions sent to the kernel, the outcomes shown, and the stale rule.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import protocol from '../../ipy_agent/notebook/protocol.json';
import {
  DIFF_LINE_LIMIT,
  arrivalOf,
  DecisionMessage,
  Proposal,
  ReviewBoard,
  headline,
  lineDiff,
  makeProposal,
  outcomeText,
  proposalProblem,
  type StageArgs
} from '../src/review';
import { RecordingView } from './recording_view';

function proposal(
  id: string,
  kind: 'replace' | 'insert' | 'delete' = 'replace',
  cellId: string | null = 'a'
): Proposal {
  return makeProposal(
    {
      proposal_id: id,
      kind,
      cell_id: cellId,
      source: 'x = 2',
      old_source: 'x = 1',
      cell_type: 'code',
      label: 'cell 1 · x = 1'
    },
    0
  );
}

let view: RecordingView;
let sent: DecisionMessage[];
let board: ReviewBoard;
let connected: boolean;

beforeEach(() => {
  view = new RecordingView();
  sent = [];
  connected = true;
  board = new ReviewBoard(
    view,
    m => {
      if (connected) {
        sent.push(m);
      }
      return connected;
    },
    () => 'work/a.ipynb'
  );
});

describe('a proposal', () => {
  it('is made from the stage_proposal args, and malformed ones are named', () => {
    expect(proposal('p1')).toEqual({
      id: 'p1',
      kind: 'replace',
      cellId: 'a',
      index: 0,
      source: 'x = 2',
      oldSource: 'x = 1',
      cellType: 'code',
      label: 'cell 1 · x = 1'
    });
    expect(proposal('p2', 'insert', null).cellId).toBeNull();
    expect(proposalProblem({ proposal_id: 'p', kind: 'replace', cell_id: 'a' })).toBeNull();
    expect(proposalProblem({ proposal_id: 'p', kind: 'insert' })).toBeNull();
    expect(proposalProblem({ kind: 'replace', cell_id: 'a' })).toContain('proposal_id');
    const unknownKind = { proposal_id: 'p', kind: 'move', cell_id: 'a' } as unknown as StageArgs; // as the wire may bring it
    expect(proposalProblem(unknownKind)).toContain('replace, insert or delete');
    expect(proposalProblem({ proposal_id: 'p', kind: 'delete' })).toContain('needs the cell_id');
  });

  it('says what the agent proposes, and where', () => {
    expect(headline(proposal('p'))).toBe('The agent proposes a change to this cell (cell 1 · x = 1)');
    expect(headline(proposal('p', 'delete'))).toContain('delete this cell');
    expect(headline(proposal('p', 'insert'))).toContain('a new code cell here');
  });
});

describe('the inline diff', () => {
  it('keeps common lines and marks removed and added ones', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc\nd')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
      { op: '+', text: 'd' }
    ]);
  });

  it('shows a new cell as all added and a deleted one as all removed', () => {
    expect(lineDiff('', 'x\ny')).toEqual([
      { op: '+', text: 'x' },
      { op: '+', text: 'y' }
    ]);
    expect(lineDiff('x', '')).toEqual([{ op: '-', text: 'x' }]);
    expect(lineDiff('same', 'same')).toEqual([{ op: ' ', text: 'same' }]);
  });

  it('does not build a table for huge cells', () => {
    const big = Array.from({ length: DIFF_LINE_LIMIT + 1 }, (_, i) => `line ${i}`).join('\n');
    const lines = lineDiff(big, 'x');
    expect(lines).toHaveLength(DIFF_LINE_LIMIT + 2);
    expect(lines[lines.length - 1]).toEqual({ op: '+', text: 'x' });
  });
});

describe('the board', () => {
  it('draws a proposal and reveals only the first open one', () => {
    board.stage(proposal('p1'), arrivalOf(true, board.open.length === 0, false));
    board.stage(proposal('p2', 'replace', 'b'), arrivalOf(true, board.open.length === 0, false));
    expect(view.shown).toEqual(['p1', 'p2']);
    expect(view.revealed).toEqual(['p1']);
    expect(board.open.map(p => p.id)).toEqual(['p1', 'p2']);
  });

  it('sends the decision with the protocol keys; a reason only with a rejection', () => {
    board.stage(proposal('p1'), 'reveal');
    board.stage(proposal('p2'), 'reveal');
    expect(board.decide('p1', 'reject', '  keep it  ')).toBe(true);
    expect(board.decide('p2', 'accept', 'ignored')).toBe(true);
    expect(Object.keys(sent[0]).sort()).toEqual(Object.keys(protocol.messages.decision.properties).sort());
    expect(sent[0]).toMatchObject({ event: 'decision', path: 'work/a.ipynb', proposal_id: 'p1', outcome: 'reject' });
    expect(sent[0].reason).toBe('keep it');
    expect(sent[1].reason).toBe('');
    expect(view.busyIds).toEqual(['p1', 'p2']);
    for (const decision of ['accept', 'reject', 'accept_all', 'reject_all', 'stale']) {
      expect(protocol.$defs.Decision.enum).toContain(decision);
    }
  });

  it('sends one decision per proposal, none for an unknown or settled one, and keeps the buttons without a comm', () => {
    board.stage(proposal('p1'), 'reveal');
    expect(board.decide('p1', 'accept')).toBe(true);
    expect(board.decide('p1', 'reject')).toBe(false); // a double click
    expect(board.decide('nope', 'accept')).toBe(false);
    board.stage(proposal('p2'), 'reveal');
    board.resolve('p2', 'accepted', '');
    expect(board.decide('p2', 'reject')).toBe(false);
    board.stage(proposal('p3'), 'reveal');
    connected = false;
    expect(board.decide('p3', 'accept')).toBe(false);
    expect(view.busyIds).toEqual(['p1']);
    expect(sent).toHaveLength(1);
  });

  it('shows how a proposal ended, whoever decided', () => {
    board.stage(proposal('p1'), 'reveal');
    expect(board.resolve('p1', 'rejected', 'not now')).toBe(true);
    expect(board.resolve('zz', 'accepted', '')).toBe(false);
    expect(view.settled).toEqual([['p1', 'rejected', 'Rejected: not now']]);
    expect(board.open).toEqual([]);
    expect(outcomeText('accepted', '')).toBe('Accepted');
    expect(outcomeText('stale', 'x')).toContain('you changed this cell');
    expect(outcomeText('cancelled', '')).toContain('Cancelled');
  });

  it('finds a proposal stale when its cell no longer holds the source it was made against', () => {
    board.stage(proposal('p1'), 'reveal'); // cell a, made against "x = 1"
    board.stage(proposal('p2', 'delete', 'b'), 'reveal');
    board.stage(proposal('p3', 'insert', 'a'), 'reveal');
    const sources: { [id: string]: string } = { a: 'x = 1', b: 'x = 1' };
    expect(board.check(id => sources[id])).toEqual([]);
    sources.a = 'x = 1  # mine';
    expect(board.check(id => sources[id])).toEqual(['p1']);
    expect(sent.map(m => [m.proposal_id, m.outcome])).toEqual([['p1', 'stale']]);
    delete sources.b; // the person deleted the cell under review
    expect(board.check(id => sources[id])).toEqual(['p2']);
    expect(board.check(id => sources[id])).toEqual([]); // said once
  });
});

describe('a proposal arriving', () => {
  it('is scrolled to when first, offered when the person scrolled since the run began, else only counted', () => {
    expect(arrivalOf(true, true, false)).toBe('reveal');
    expect(arrivalOf(true, true, true)).toBe('offer');
    expect(arrivalOf(true, false, false)).toBe('none');
    expect(arrivalOf(false, true, false)).toBe('none');
  });

  it('offered: a notice, and the page stays where the person is', () => {
    board.stage(proposal('p1'), 'offer');
    expect(view.offered).toEqual(['p1']);
    expect(view.revealed).toEqual([]);
  });
});

describe('the end of a run', () => {
  it('ends the proposals still open as cancelled, and tells whoever counts them', () => {
    let changes = 0;
    board.onChange(() => changes++);
    board.stage(proposal('p1'), 'reveal');
    board.stage(proposal('p2', 'replace', 'b'), 'none');
    board.resolve('p1', 'accepted', '');
    expect(changes).toBe(3);
    expect(board.endRun()).toEqual(['p2']);
    expect(view.settled.map(([id, outcome]) => [id, outcome])).toEqual([
      ['p1', 'accepted'],
      ['p2', 'cancelled']
    ]);
    expect(board.open).toEqual([]);
    expect(changes).toBe(4);
    expect(sent).toEqual([]); // nothing to tell the kernel: its run is over
  });

  it('a decision on its way is pending until the kernel resolves it', () => {
    board.stage(proposal('p1'), 'reveal');
    expect(board.pending('p1')).toBe(false);
    board.decide('p1', 'accept');
    expect(board.pending('p1')).toBe(true);
    board.resolve('p1', 'accepted', '');
    expect(board.pending('p1')).toBe(false);
  });
});
