/**
 * The words of the extension's fallback buttons: one vocabulary per kind of question, as the
 * kernel's prompt says it (ipy_agent/ui/prompt_words.py), and one place every reason goes.
 */
import { describe, expect, it } from 'vitest';
import { PromptRequest, REASON_GOES, promptWords } from '../src/fallback';

const base: PromptRequest = { prompt_id: 'p1', cell_id: 'c', title: 'Edit', detail: '', rule: 'Edit(./*.ipynb)' };

describe('the fallback prompt words', () => {
  it('answers a cell edit under review with Accept / Reject and the lasting choice the kernel named', () => {
    const words = promptWords({
      ...base,
      review: true,
      always_label: 'Always accept edits to notebooks in this folder'
    });
    expect([words.allow, words.deny, words.always]).toEqual([
      'Accept',
      'Reject',
      'Always accept edits to notebooks in this folder'
    ]);
    expect(words.all).toBe(true);
    expect(words.reason).toBe('Reason for rejecting (optional, sent to the agent)');
    expect(words.alwaysTip).toContain('Edit(./*.ipynb)'); // the rule granted, as before
    expect(words.done.always).toBe(
      'Accepted; from now on: accept edits to notebooks in this folder (rule Edit(./*.ipynb))'
    );
    expect(JSON.stringify(words)).not.toMatch(/Allow|Deny|the model/);
  });

  it('asks every other call with Allow / Always allow / Deny, the reason going to the agent', () => {
    const words = promptWords({ ...base, rule: 'Bash(make:*)' });
    expect([words.allow, words.always, words.deny]).toEqual(['Allow', 'Always allow Bash(make:*)', 'Deny']);
    expect(words.all).toBe(false);
    expect(words.reason).toBe(`Reason for denying (${REASON_GOES})`);
    expect(REASON_GOES).toBe('optional, sent to the agent');
    expect(JSON.stringify(words)).not.toMatch(/Accept|Reject|the model/);
  });
});
