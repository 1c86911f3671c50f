/**
 * Staged cell edits, reviewed in the cell: the page's half, without the DOM.
 *
 * When the agent's NotebookEdit asks to change the open notebook, the kernel stages a proposal
 * (`stage_proposal`): the change is drawn in the cell it changes, with Accept and Reject, and
 * nothing changes in the notebook model. The person's answer goes back unasked, as a `decision`
 * message ({protocol, event: "decision", path, proposal_id, outcome, reason}); the kernel answers
 * the waiting permission with it (the `%agent` cell's prompt answers the same question) and
 * then says how it ended (`resolve_proposal`). The stale rule: when the person types in a cell
 * under review (its source is no longer the one the proposal was made against), the proposal is
 * stale and the page says so to the kernel.
 *
 * `ReviewBoard` keeps one notebook's proposals and decides what to send; drawing them is a
 * `ReviewView`'s work (reviewView.ts, the DOM), so this file is unit-tested without a browser.
 */
import {
  DECISIONS,
  OUTCOMES,
  PROTOCOL,
  type Decision,
  type DecisionMessage,
  type Outcome,
  type ProposalKind,
  type StageProposalArgs
} from './protocol';

export { DECISIONS, OUTCOMES };
export type { Decision, DecisionMessage, Outcome };
export type Kind = ProposalKind;

/** One staged change, as the kernel sent it (index: where the cell is, or where the new one goes). */
export interface Proposal {
  id: string;
  kind: Kind;
  cellId: string | null;
  index: number;
  source: string;
  oldSource: string;
  cellType: string;
  label: string;
}

/**
 * How a newly staged proposal is brought to the person: the notebook scrolls to it, or (when the
 * person scrolled since the run began, so the page does not take their place away) a notice
 * offers to go there, or nothing (a later proposal: the review bar counts it).
 */
export type Arrival = 'reveal' | 'offer' | 'none';

/**
 * How a staged proposal arrives: only the first open one moves the page (a later one waits its
 * turn in the review bar); it is scrolled to unless the kernel asked not to, or the person
 * scrolled since the run began, when a notice offers to go there instead.
 */
export function arrivalOf(scroll: boolean, first: boolean, personScrolled: boolean): Arrival {
  if (!scroll || !first) {
    return 'none';
  }
  return personScrolled ? 'offer' : 'reveal';
}

/** What the DOM side does: draw a proposal, show its outcome, bring it into view. */
export interface ReviewView {
  show(proposal: Proposal): void;
  settle(proposal: Proposal, outcome: Outcome, text: string): void;
  reveal(proposal: Proposal): void;
  /** A notice that offers to go to the proposal, instead of scrolling there. */
  offer(proposal: Proposal): void;
  /** Buttons off while a decision is on its way to the kernel. */
  busy(proposal: Proposal, on: boolean): void;
}

/** A stage_proposal request's args as received: typed as the schema says, each possibly missing. */
export type StageArgs = { readonly [K in keyof StageProposalArgs]?: StageProposalArgs[K] };

/** Why a stage_proposal request is malformed, or null when it is well formed. */
export function proposalProblem(args: StageArgs): string | null {
  if (typeof args.proposal_id !== 'string' || !args.proposal_id) {
    return 'proposal_id must be a non-empty string';
  }
  if (args.kind !== 'replace' && args.kind !== 'insert' && args.kind !== 'delete') {
    return `kind must be replace, insert or delete, not ${JSON.stringify(args.kind)}`;
  }
  if (args.kind !== 'insert' && (typeof args.cell_id !== 'string' || !args.cell_id)) {
    return `a ${args.kind} proposal needs the cell_id of the cell it changes`;
  }
  return null;
}

/** A proposal from its request's args, placed at `index` (found by the handler). */
export function makeProposal(args: StageArgs, index: number): Proposal {
  return {
    id: String(args.proposal_id),
    kind: args.kind as Kind,
    cellId: typeof args.cell_id === 'string' && args.cell_id ? args.cell_id : null,
    index,
    source: String(args.source ?? ''),
    oldSource: String(args.old_source ?? ''),
    cellType: String(args.cell_type ?? 'code'),
    label: String(args.label ?? '')
  };
}

export type DiffLine = { op: ' ' | '+' | '-'; text: string };

/** More lines than this on either side: shown as all removed, then all added (no LCS table). */
export const DIFF_LINE_LIMIT = 2000;

/** The line diff of `before` into `after` (longest common subsequence), for the inline view. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before === '' ? [] : before.split('\n');
  const b = after === '' ? [] : after.split('\n');
  if (a.length > DIFF_LINE_LIMIT || b.length > DIFF_LINE_LIMIT) {
    return [...a.map(text => ({ op: '-' as const, text })), ...b.map(text => ({ op: '+' as const, text }))];
  }
  // common[i][j]: the longest common subsequence of a[i:] and b[j:]
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ op: ' ', text: a[i++] });
      j++;
    } else if (i < a.length && (j >= b.length || common[i + 1][j] >= common[i][j + 1])) {
      lines.push({ op: '-', text: a[i++] }); // a removal before the addition that replaces it
    } else {
      lines.push({ op: '+', text: b[j++] });
    }
  }
  return lines;
}

/** What the proposal says once it ended, in place of its buttons. */
export function outcomeText(outcome: Outcome, reason: string): string {
  const words: { [o in Outcome]: string } = {
    accepted: 'Accepted',
    rejected: 'Rejected',
    stale: 'Stale: you changed this cell while the proposal was under review; the agent will read it again',
    cancelled: 'Cancelled: the run ended before an answer'
  };
  return reason && outcome !== 'stale' ? `${words[outcome]}: ${reason}` : words[outcome];
}

/** The heading of a proposal: what the agent proposes, and where. */
export function headline(proposal: Proposal): string {
  const where = proposal.label ? ` (${proposal.label})` : '';
  if (proposal.kind === 'insert') {
    return `The agent proposes a new ${proposal.cellType} cell here${where}`;
  }
  if (proposal.kind === 'delete') {
    return `The agent proposes to delete this cell${where}`;
  }
  return `The agent proposes a change to this cell${where}`;
}

/** The open and settled proposals of one notebook, and the decisions the person sends. */
export class ReviewBoard {
  readonly proposals = new Map<string, Proposal>();
  readonly outcomes = new Map<string, Outcome>();
  private readonly sent = new Set<string>(); // decided here, the kernel's resolve still to come
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly view: ReviewView,
    private readonly send: (message: DecisionMessage) => boolean,
    private readonly path: () => string
  ) {}

  /** The proposals still waiting for an answer, in the order they were staged. */
  get open(): Proposal[] {
    return [...this.proposals.values()].filter(p => !this.outcomes.has(p.id));
  }

  /** Call `listener` whenever the open proposals change (the review bar counts them). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }

  /** Whether a decision on `id` is on its way to the kernel (its buttons are off). */
  pending(id: string): boolean {
    return this.sent.has(id);
  }

  stage(proposal: Proposal, arrival: Arrival): void {
    this.proposals.set(proposal.id, proposal);
    this.view.show(proposal);
    if (arrival === 'reveal') {
      this.view.reveal(proposal);
    } else if (arrival === 'offer') {
      this.view.offer(proposal);
    }
    this.changed();
  }

  /**
   * The run ended (its cell finished) with proposals still open: no one waits for their answer
   * any more, so they end as cancelled and their banners leave. The kernel's own resolve comes
   * first when it can send one; this is for a kernel that could not (it died, or was restarted).
   */
  endRun(): string[] {
    const ended = this.open.map(p => p.id);
    for (const id of ended) {
      this.resolve(id, 'cancelled', '');
    }
    return ended;
  }

  /** The kernel says how a proposal ended; false when it does not know it. */
  resolve(id: string, outcome: Outcome, reason: string): boolean {
    const proposal = this.proposals.get(id);
    if (!proposal) {
      return false;
    }
    this.outcomes.set(id, outcome);
    this.sent.delete(id);
    this.view.settle(proposal, outcome, outcomeText(outcome, reason));
    this.changed();
    return true;
  }

  /** The person answered in the page (a button, or their typing for "stale"). */
  decide(id: string, decision: Decision, reason = ''): boolean {
    const proposal = this.proposals.get(id);
    if (!proposal || this.outcomes.has(id) || this.sent.has(id)) {
      return false;
    }
    const message: DecisionMessage = {
      protocol: PROTOCOL,
      event: 'decision',
      path: this.path(),
      proposal_id: id,
      outcome: decision,
      reason: decision === 'reject' || decision === 'reject_all' ? reason.trim() : ''
    };
    if (!this.send(message)) {
      return false; // no comm to the kernel: the buttons stay, the %agent prompt still asks
    }
    this.sent.add(id);
    this.view.busy(proposal, true);
    this.changed();
    return true;
  }

  /**
   * The stale rule: after any change of the notebook, `sourceOf(cellId)` is the cell's source
   * now (undefined: the cell is gone). A proposal whose cell no longer holds the source it was
   * made against is stale; returns the ids found stale.
   */
  check(sourceOf: (cellId: string) => string | undefined): string[] {
    const stale: string[] = [];
    for (const proposal of this.open) {
      if (proposal.kind === 'insert' || proposal.cellId === null || this.sent.has(proposal.id)) {
        continue;
      }
      if (sourceOf(proposal.cellId) !== proposal.oldSource && this.decide(proposal.id, 'stale')) {
        stale.push(proposal.id);
      }
    }
    return stale;
  }
}
