/**
 * Which policies a cell shows and what its badge says: the kernel's vocabulary
 * (ipy_agent/notebook/policy.py), from the cell's tags and the notebook's metadata.
 */
import { describe, expect, it } from 'vitest';
import { cellPolicies, explain, timeoutSeconds } from '../src/policyBadge';
import shared from './policy_cases.json';

const badges = (id: string, tags: unknown, meta: unknown = {}) => cellPolicies(id, tags, meta).map(p => p.badge);

describe('cellPolicies finds what the kernel finds (policy_cases.json, read by the kernel tests too)', () => {
  it.each(shared.cases.map(c => [JSON.stringify(c.tags), c] as const))('%s', (_, c) => {
    const found = cellPolicies(c.id, c.tags, c.metadata);
    expect(found.map(p => [p.tag, p.source])).toEqual(c.found);
    expect(found.find(p => p.seconds !== undefined)?.seconds ?? null).toBe(c.timeout);
  });
});

describe('cellPolicies', () => {
  it('reads the policy tags of the cell, and no other tag', () => {
    expect(badges('a', ['agent:never-run', 'slow', 'agent:ask', 'agent:read-only'])).toEqual([
      'never-run',
      'ask',
      'read-only'
    ]);
    expect(badges('a', ['agent:nope', 'agent:', 'never-run', 3])).toEqual([]);
    expect(badges('a', undefined)).toEqual([]);
  });

  it('reads what "Never run this cell" writes: the notebook metadata for this cell only', () => {
    const meta = { cell_policies: { a: ['agent:never-run'], b: ['agent:ask'] } };
    expect(cellPolicies('a', [], meta)).toEqual([
      { tag: 'agent:never-run', source: 'cell_policies', badge: 'never-run' }
    ]);
    expect(badges('c', [], meta)).toEqual([]);
  });

  it('applies the notebook-wide list to every cell, a tag of the cell first', () => {
    const meta = { policy: ['agent:ask', 'agent:read-only'] };
    const found = cellPolicies('a', ['agent:read-only'], meta);
    expect(found.map(p => [p.badge, p.source])).toEqual([
      ['read-only', 'tag'],
      ['ask', 'policy']
    ]);
  });

  it('counts the first valid timeout only, with its seconds', () => {
    expect(badges('a', ['agent:timeout=30'])).toEqual(['timeout 30 s']);
    expect(badges('a', ['agent:timeout=abc', 'agent:timeout=2.5s', 'agent:timeout=9'])).toEqual(['timeout 2.5 s']);
    expect(badges('a', [], { cell_policies: { a: ['agent:timeout=60'] }, policy: ['agent:timeout=5'] })).toEqual([
      'timeout 60 s'
    ]);
  });

  it('ignores metadata of the wrong shape', () => {
    expect(badges('a', [], { cell_policies: ['agent:ask'], policy: 'agent:ask' })).toEqual([]);
    expect(badges('a', [], null)).toEqual([]);
  });
});

describe('timeoutSeconds reads a value as policy.py does', () => {
  it.each([
    ['30', 30],
    [' 30 ', 30],
    ['30s', 30],
    ['1e3', 1000],
    ['1_000', 1000],
    ['.5', 0.5]
  ])('%j is %d s', (text, seconds) => {
    expect(timeoutSeconds(text)).toBe(seconds);
  });

  it.each(['', '0', '-5', 'inf', 'nan', '0x10', '30ms', '1__0', 'abc'])('%j is no timeout', text => {
    expect(timeoutSeconds(text)).toBeUndefined();
  });
});

describe('explain', () => {
  it('says what the agent may not do and how to remove the policy, by where it is set', () => {
    const meta = { cell_policies: { c1: ['agent:never-run'] } };
    const [never] = explain(cellPolicies('c1', [], meta), 'c1');
    expect(never.title).toBe('never-run (agent:never-run)');
    expect(never.text).toContain('may not run this cell');
    expect(never.text).toContain('ipy_agent.cell_policies["c1"]');
    const [readOnly] = explain(cellPolicies('c1', ['agent:read-only'], {}), 'c1');
    expect(readOnly.text).toContain('not change, move or delete it');
    expect(readOnly.text).toContain('delete that tag');
    const [timeout] = explain(cellPolicies('c1', [], { policy: ['agent:timeout=30'] }), 'c1');
    expect(timeout.text).toContain('stops after 30 s');
    expect(timeout.text).toContain('ipy_agent.policy');
  });
});
