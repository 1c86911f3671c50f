/**
 * Answer buttons for an approval prompt the page could not show or answer (see the kernel's
 * ipy_agent/ui/fallback_prompt.py).
 *
 * The prompt is an ipywidgets widget; when the page has no widget manager, or the widget's comm
 * died, the person has nothing to click and the run waits. The kernel then asks this extension,
 * over its own comm: `prompt_shown` (is the widget with the class `ipy-agent-prompt-<id>` on the
 * page? the view's acknowledgement), and when it is not, `ask_permission`: draw Allow / Always
 * allow / Deny and a reason box under the running cell, and reply with the person's answer. A cell
 * edit under review (`review`) is answered as in the cell: Accept / Reject, Accept all / Reject all
 * and one "Always accept edits to …" (`always_label`, named by the kernel from the rule).
 * `withdraw_prompt` takes the buttons away when the prompt was answered another way.
 *
 * This module is plain DOM, no JupyterLab: `index.ts` finds the cell's node, `handler.ts`
 * validates the requests.
 */

import type { Behavior } from './protocol';

export type { Behavior }; // the last two, accept_all and reject_all: a review's

export const PROMPT_CLASS = 'ipy-agent-prompt-';

/** Where a typed reason goes, the same words in every reason box (the kernel's ui/prompt_words.py). */
export const REASON_GOES = 'optional, sent to the agent';

export interface PromptRequest {
  prompt_id: string;
  cell_id: string | null;
  title: string; // what the call does, e.g. "Edit notes.txt"
  detail: string; // the command or diff, and why it asks (plain text)
  rule: string; // what "Always allow" adds
  review?: boolean; // a cell edit under review: Accept / Reject
  always_label?: string; // the lasting choice as a person reads it, e.g. "Always accept edits to notebooks in this folder"
  questions?: PromptQuestion[]; // AskUserQuestion's: answered instead of allowed or denied
}

/** One of AskUserQuestion's questions: pick an option (or several), or type an answer of one's own. */
export interface PromptQuestion {
  question: string;
  header: string;
  options: { label: string; description: string }[];
  multi_select: boolean;
}

export interface PromptAnswer {
  behavior: Behavior; // for questions: allow is Answer, deny is Skip
  message: string;
  answers?: { [question: string]: string };
}

/** True as soon as `check()` is, polling every `every` ms; false after `waitMs`. */
export async function waitUntil(check: () => boolean, waitMs: number, every = 100): Promise<boolean> {
  const end = Date.now() + waitMs;
  for (;;) {
    if (check()) {
      return true;
    }
    if (Date.now() >= end) {
      return false;
    }
    await new Promise(resolve => setTimeout(resolve, Math.min(every, Math.max(end - Date.now(), 0))));
  }
}

/** Is the prompt's widget drawn under `root`? */
export function promptShown(root: ParentNode, promptId: string): boolean {
  return root.querySelector(`.${PROMPT_CLASS}${promptId}`) !== null;
}

const open = new Map<string, (outcome: string) => void>();

/** What an approval prompt's controls say: one vocabulary per kind of question. */
export interface PromptWords {
  allow: string;
  allowTip: string;
  always: string;
  alwaysTip: string;
  deny: string;
  denyTip: string;
  reason: string; // the reason box's placeholder
  done: { [behavior in Behavior]: string }; // the answered prompt's line
  all: boolean; // Accept all / Reject all are offered
}

/** Allow / Always allow / Deny, or for a cell edit under review Accept / Reject and the rest. */
export function promptWords(req: PromptRequest): PromptWords {
  if (req.review) {
    const always = req.always_label || `Always accept ${req.rule}`;
    return {
      allow: 'Accept',
      allowTip: 'Accept this change',
      always,
      alwaysTip: `Accept, and accept such edits from now on without asking: adds the rule ${req.rule} for this kernel session`,
      deny: 'Reject',
      denyTip: 'Leave the cell as it is; the reason goes to the agent',
      reason: `Reason for rejecting (${REASON_GOES})`,
      done: {
        allow: 'Accepted',
        always: `Accepted; from now on: ${always.replace(/^Always /, '')} (rule ${req.rule})`,
        deny: 'Rejected',
        accept_all: 'Accepted (Accept all)',
        reject_all: 'Rejected (Reject all)'
      },
      all: true
    };
  }
  return {
    allow: 'Allow',
    allowTip: 'Allow this call once',
    always: `Always allow ${req.rule}`,
    alwaysTip: `Allow, and add the rule ${req.rule} for this kernel session`,
    deny: 'Deny',
    denyTip: 'Refuse; the reason goes to the agent',
    reason: `Reason for denying (${REASON_GOES})`,
    done: {
      allow: 'Allowed once',
      always: `Allowed; rule added: ${req.rule}`,
      deny: 'Denied',
      accept_all: 'Allowed',
      reject_all: 'Denied'
    },
    all: false
  };
}

function button(label: string, title: string, colour: string): HTMLButtonElement {
  const b = document.createElement('button');
  b.textContent = label;
  b.title = title;
  b.className = 'jp-Button';
  b.style.cssText = `margin:2px 4px 2px 0;padding:2px 10px;color:white;background:${colour};border:none;border-radius:2px`;
  return b;
}

/**
 * Put `row` (the controls) and a line for the outcome in `box`, at the end of `host`; returns
 * how the prompt settles: the controls disabled and gone, the outcome shown (or the box removed
 * when there is none). The prompt stays open, for `withdrawPrompt`, until it settles.
 */
function mount(
  host: HTMLElement,
  box: HTMLElement,
  row: HTMLElement,
  promptId: string,
  controls: (HTMLInputElement | HTMLButtonElement)[]
): (outcome: string) => void {
  const outcome = document.createElement('div');
  outcome.style.cssText = 'font-style:italic;opacity:0.8';
  box.append(row, outcome);
  host.appendChild(box);
  const settle = (text: string) => {
    open.delete(promptId);
    for (const el of controls) {
      el.disabled = true;
    }
    row.remove();
    outcome.textContent = text;
    if (!text) {
      box.remove();
    }
  };
  open.set(promptId, settle);
  return settle;
}

/**
 * Draw the buttons at the end of `host` (the running cell's node); resolves with the person's
 * answer. A second request for the same prompt replaces the first one's buttons.
 */
export function drawPrompt(host: HTMLElement, req: PromptRequest): Promise<PromptAnswer> {
  withdrawPrompt(req.prompt_id, '');
  const box = document.createElement('div');
  box.className = 'ipy-agent-fallback';
  box.dataset.promptId = req.prompt_id;
  // Keys typed in the reason box are text, not notebook shortcuts.
  box.dataset.lmSuppressShortcuts = 'true';
  box.style.cssText =
    'border:1px solid rgba(208,135,0,0.6);padding:4px 8px;margin:4px 0 4px 64px;font-size:var(--jp-ui-font-size1)';
  const head = document.createElement('div');
  head.textContent = `ipy_agent asks (the prompt above could not be used): ${req.title}`;
  head.style.fontWeight = 'bold';
  box.appendChild(head);
  if (req.detail) {
    const pre = document.createElement('pre');
    pre.textContent = req.detail;
    pre.style.cssText = 'max-height:16em;overflow:auto;margin:4px 0';
    box.appendChild(pre);
  }
  if (req.questions && req.questions.length > 0) {
    return drawQuestions(box, host, req, req.questions);
  }
  const row = document.createElement('div');
  const words = promptWords(req);
  const allow = button(words.allow, words.allowTip, '#2da44e');
  const always = button(words.always, words.alwaysTip, '#6e7781');
  const deny = button(words.deny, words.denyTip, '#cf222e');
  const all = words.all
    ? [
        button('Accept all', 'Accept this and every other change the agent proposes in this run', '#6e7781'),
        button('Reject all', 'Reject this and every other change the agent proposes in this run', '#6e7781')
      ]
    : [];
  const reason = document.createElement('input');
  reason.type = 'text';
  reason.placeholder = words.reason;
  reason.style.cssText = 'min-width:18em;margin-left:4px';
  reason.addEventListener('keydown', event => event.stopPropagation());
  // A review reads as the cell does: Accept, Reject, Accept all, Reject all, then the lasting choice.
  row.append(...(words.all ? [allow, deny, ...all, always] : [allow, always, deny]), reason);
  const settle = mount(host, box, row, req.prompt_id, [allow, always, deny, ...all, reason]);
  return new Promise<PromptAnswer>(resolve => {
    const answer = (behavior: Behavior) => {
      const message = behavior === 'deny' || behavior === 'reject_all' ? reason.value.trim() : '';
      const done = words.done[behavior];
      settle(message ? `${done}: ${message}` : done);
      resolve({ behavior, message });
    };
    allow.onclick = () => answer('allow');
    always.onclick = () => answer('always');
    deny.onclick = () => answer('deny');
    if (all.length === 2) {
      all[0].onclick = () => answer('accept_all');
      all[1].onclick = () => answer('reject_all');
    }
  });
}

/** Take a prompt's buttons away, leaving `outcome` (nothing when empty). False when none were open. */
export function withdrawPrompt(promptId: string, outcome: string): boolean {
  const settle = open.get(promptId);
  if (settle === undefined) {
    return false;
  }
  settle(outcome);
  return true;
}

/** Radio buttons (checkboxes for several) and an answer of one's own per question; Answer and Skip. */
function drawQuestions(
  box: HTMLElement,
  host: HTMLElement,
  req: PromptRequest,
  questions: PromptQuestion[]
): Promise<PromptAnswer> {
  const answers: (() => string)[] = [];
  const inputs: (HTMLInputElement | HTMLButtonElement)[] = [];
  questions.forEach((q, n) => {
    const field = document.createElement('fieldset');
    field.style.cssText = 'border:none;margin:4px 0;padding:0';
    const legend = document.createElement('legend');
    legend.textContent = q.multi_select ? `${q.question} (choose any)` : q.question;
    legend.style.fontWeight = 'bold';
    field.appendChild(legend);
    const picks: HTMLInputElement[] = [];
    for (const option of q.options) {
      const label = document.createElement('label');
      label.style.cssText = 'display:block;cursor:pointer';
      const input = document.createElement('input');
      input.type = q.multi_select ? 'checkbox' : 'radio';
      input.name = `ipy-agent-${req.prompt_id}-${n}`;
      input.value = option.label;
      label.append(input, ` ${option.label}`);
      if (option.description) {
        label.title = option.description;
        const note = document.createElement('span');
        note.textContent = ` (${option.description})`;
        note.style.opacity = '0.7';
        label.appendChild(note);
      }
      picks.push(input);
      field.appendChild(label);
    }
    const own = document.createElement('input');
    own.type = 'text';
    own.placeholder = 'Other: your own answer';
    own.style.cssText = 'min-width:18em';
    own.addEventListener('keydown', event => event.stopPropagation());
    field.appendChild(own);
    inputs.push(...picks, own);
    // As the widget answers: one choice, or the words typed when none is picked; several joined.
    answers.push(() => {
      const picked = picks.filter(p => p.checked).map(p => p.value);
      const typed = own.value.trim();
      return q.multi_select ? [...picked, ...(typed ? [typed] : [])].join(', ') : (picked[0] ?? typed);
    });
    box.appendChild(field);
  });
  const row = document.createElement('div');
  const submit = button('Answer', 'Send these answers to the agent', '#2da44e');
  const skip = button('Skip', 'Do not answer; the agent chooses itself', '#6e7781');
  row.append(submit, skip);
  const settle = mount(host, box, row, req.prompt_id, [...inputs, submit, skip]);
  return new Promise<PromptAnswer>(resolve => {
    submit.onclick = () => {
      const given: { [question: string]: string } = {};
      questions.forEach((q, n) => (given[q.question] = answers[n]()));
      settle('Answered: ' + questions.map(q => `${q.header}: ${given[q.question] || '(no answer)'}`).join('; '));
      resolve({ behavior: 'allow', message: '', answers: given });
    };
    skip.onclick = () => {
      settle('Skipped');
      resolve({ behavior: 'deny', message: '' });
    };
  });
}
