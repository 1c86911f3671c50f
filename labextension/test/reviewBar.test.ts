/**
 * The review bar's words and its Previous / Next, and when a change may scroll the page, without a
 * browser (the bar's drawing is tested in tests/browser/test_review_bar.py).
 */
import { describe, expect, it } from 'vitest';
import { barText, step } from '../src/reviewBar';
import { scrolledSince } from '../src/scrollWatch';

describe('the review bar', () => {
  it('counts the changes waiting', () => {
    expect(barText(1)).toBe('1 change to review');
    expect(barText(2)).toBe('2 changes to review');
  });

  it('Next and Previous go round the open changes', () => {
    const open = ['a', 'b', 'c'];
    expect(step(open, 'a', 1)).toBe('b');
    expect(step(open, 'c', 1)).toBe('a');
    expect(step(open, 'a', -1)).toBe('c');
    expect(step(open, 'b', -1)).toBe('a');
  });

  it('from none, or from a change answered since, Next goes to the first and Previous to the last', () => {
    expect(step(['a', 'b'], null, 1)).toBe('a');
    expect(step(['a', 'b'], 'gone', -1)).toBe('b');
    expect(step([], 'a', 1)).toBeNull();
  });
});

describe('the person scrolled since the run began', () => {
  it('only a scroll at or after the run began counts', () => {
    expect(scrolledSince(null, 10)).toBe(false);
    expect(scrolledSince(5, 10)).toBe(false);
    expect(scrolledSince(12, 10)).toBe(true);
    expect(scrolledSince(12, null)).toBe(false);
  });
});
