/** A review view (src/review.ts) for the unit tests: it records what it was asked to draw. */
import { Outcome, Proposal, ReviewView } from '../src/review';

/** A view that records what it was asked to draw. */
export class RecordingView implements ReviewView {
  shown: string[] = [];
  settled: [string, Outcome, string][] = [];
  revealed: string[] = [];
  offered: string[] = [];
  busyIds: string[] = [];
  show(p: Proposal): void {
    this.shown.push(p.id);
  }
  settle(p: Proposal, outcome: Outcome, text: string): void {
    this.settled.push([p.id, outcome, text]);
  }
  reveal(p: Proposal): void {
    this.revealed.push(p.id);
  }
  offer(p: Proposal): void {
    this.offered.push(p.id);
  }
  busy(p: Proposal, on: boolean): void {
    if (on) {
      this.busyIds.push(p.id);
    }
  }
}
