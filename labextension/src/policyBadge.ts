/**
 * The person's cell policies, made visible: a small badge on each cell the agent must treat
 * differently ("never-run", "ask", "read-only", "timeout 30 s"), which explains itself when clicked.
 *
 * The vocabulary is the kernel's, ipy_agent/notebook/policy.py (read it before changing this):
 * the tags `agent:never-run`, `agent:ask`, `agent:read-only` and `agent:timeout=S`, from the
 * cell's own tags, from the notebook's metadata `ipy_agent.cell_policies[cell id]` (what "Never run
 * this cell" in the agent's prompt writes), or for every cell from `ipy_agent.policy`. A policy is
 * found where `policy_sources` finds it: the cell's tags first, then the notebook's entry for the
 * cell, then the notebook's list; only the first valid timeout counts.
 *
 * `cellPolicies` and `explain` are pure (unit-tested in test/policyBadge.test.ts); `watchPolicies`
 * draws the badges in a notebook panel and redraws a cell's when its metadata (its tags) or the
 * notebook's metadata changes: signals, no polling.
 */
import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

export const ASK = 'agent:ask';
export const NEVER_RUN = 'agent:never-run';
export const READ_ONLY = 'agent:read-only';
export const TIMEOUT_PREFIX = 'agent:timeout=';
export const POLICY_TAGS: readonly string[] = [ASK, NEVER_RUN, READ_ONLY];
export const BADGE_CLASS = 'ipy-agent-policy-badge';
/** The notebook metadata key the policies live under (as in handler.ts). */
const AGENT_KEY = 'ipy_agent';

export type Source = 'tag' | 'cell_policies' | 'policy';

/** One policy that applies to a cell, and where it is set. */
export interface CellPolicy {
  tag: string; // `agent:never-run`, `agent:timeout=30`
  source: Source;
  badge: string; // `never-run`, `timeout 30 s`
  seconds?: number; // a timeout's
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
}

// Python's float() of what follows `agent:timeout=`, after `.strip().removesuffix("s")`:
// decimal digits (with single underscores between them), a point, an exponent.
const DIGITS = '\\d(?:_?\\d)*';
const FLOAT = new RegExp(`^[+-]?(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?$`);

/** The seconds of a timeout tag's value, as policy.py reads them; undefined when not valid. */
export function timeoutSeconds(text: string): number | undefined {
  let value = text.trim();
  if (value.endsWith('s')) {
    value = value.slice(0, -1);
  }
  value = value.trim(); // float() strips what is left
  if (!FLOAT.test(value)) {
    return undefined;
  }
  const seconds = Number(value.replace(/_/g, ''));
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

function secondsText(seconds: number): string {
  return String(Number(seconds.toPrecision(6)));
}

/**
 * Every policy that applies to the cell with `cellId` and `tags`, under the notebook's
 * `ipy_agent` metadata: policy.py's `policy_sources`, in its order (the cell's tags first).
 */
export function cellPolicies(cellId: string, tags: unknown, agentMetadata: unknown): CellPolicy[] {
  const meta =
    typeof agentMetadata === 'object' && agentMetadata !== null ? (agentMetadata as Record<string, unknown>) : {};
  const perCell = meta.cell_policies;
  const sources: [Source, string[]][] = [
    ['tag', strings(tags)],
    [
      'cell_policies',
      typeof perCell === 'object' && perCell !== null && !Array.isArray(perCell)
        ? strings((perCell as Record<string, unknown>)[cellId])
        : []
    ],
    ['policy', strings(meta.policy)]
  ];
  const found: CellPolicy[] = [];
  let timed = false;
  for (const [source, list] of sources) {
    for (const tag of list) {
      if (POLICY_TAGS.includes(tag)) {
        if (!found.some(p => p.tag === tag)) {
          found.push({ tag, source, badge: tag.slice('agent:'.length) });
        }
      } else if (tag.startsWith(TIMEOUT_PREFIX) && !timed) {
        const seconds = timeoutSeconds(tag.slice(TIMEOUT_PREFIX.length));
        if (seconds !== undefined) {
          timed = true;
          found.push({ tag, source, badge: `timeout ${secondsText(seconds)} s`, seconds });
        }
      }
    }
  }
  return found;
}

/** What the agent may and may not do with the cell under this policy, in plain words. */
export function meaning(policy: CellPolicy): string {
  const asksToLift = 'Deleting the cell or removing this policy asks you first.';
  switch (policy.tag) {
    case NEVER_RUN:
      return (
        'The agent may not run this cell, in any permission mode (bypassPermissions included). ' +
        `It may read it and propose edits. ${asksToLift}`
      );
    case ASK:
      return (
        'The agent asks you every time before it runs this cell, whatever its rules and mode allow. ' +
        `It may read it and propose edits. ${asksToLift}`
      );
    case READ_ONLY:
      return (
        'The agent may read this cell but not change, move or delete it, nor remove this policy: ' +
        'such a change is refused, in any permission mode.'
      );
    default:
      return `When the agent runs this cell without a timeout of its own, the run stops after ${secondsText(
        policy.seconds ?? 0
      )} s. Deleting the cell, or removing or raising this timeout, asks you first.`;
  }
}

/** Where the policy is set, and how the person removes it. */
export function removal(policy: CellPolicy, cellId: string): string {
  switch (policy.source) {
    case 'tag':
      return (
        `Set by the cell's tag ${policy.tag}. To remove it, delete that tag ` +
        '(property inspector, Common Tools, Cell Tags; or the cell metadata editor).'
      );
    case 'cell_policies':
      return (
        'Set for this cell in the notebook\'s metadata (as "Never run this cell" in the agent\'s prompt does). ' +
        `To remove it, delete ${JSON.stringify(policy.tag)} from ipy_agent.cell_policies[${JSON.stringify(cellId)}] ` +
        "in the notebook's metadata (property inspector, Advanced Tools, Notebook metadata)."
      );
    case 'policy':
      return (
        "Set for every cell in the notebook's metadata. To remove it, delete " +
        `${JSON.stringify(policy.tag)} from ipy_agent.policy in the notebook's metadata ` +
        '(property inspector, Advanced Tools, Notebook metadata).'
      );
  }
}

/** The explanation shown when a badge is clicked: one paragraph per policy. */
export function explain(policies: CellPolicy[], cellId: string): { title: string; text: string }[] {
  return policies.map(p => ({ title: `${p.badge} (${p.tag})`, text: `${meaning(p)} ${removal(p, cellId)}` }));
}

// --- the page ---------------------------------------------------------------------------------

const STYLE_ID = 'ipy-agent-policy-style';
const CSS = `
.ipy-agent-policy { margin: 2px 0 0 var(--jp-cell-prompt-width, 64px); font-size: var(--jp-ui-font-size0); }
.ipy-agent-policy > summary { list-style: none; cursor: pointer; display: inline-flex; gap: 4px; }
.ipy-agent-policy > summary::-webkit-details-marker { display: none; }
.${BADGE_CLASS} { padding: 0 6px; border-radius: 8px; border: 1px solid rgba(208, 135, 0, 0.8);
  color: var(--jp-ui-font-color1); background: rgba(208, 135, 0, 0.15); line-height: 16px; }
.ipy-agent-policy-explain { margin: 4px 0; padding: 6px 8px; max-width: 48em;
  border: 1px solid var(--jp-border-color1); border-radius: 3px; background: var(--jp-layout-color1);
  font-size: var(--jp-ui-font-size1); }
.ipy-agent-policy-explain p { margin: 0 0 4px 0; }
`;

function ensureStyle(): void {
  if (!document.getElementById(STYLE_ID)) {
    const style = document.createElement('style');
    style.id = STYLE_ID;
    style.textContent = CSS;
    document.head.appendChild(style);
  }
}

/** Draw (or take away) the cell's badges, just above its input. */
function drawBadges(cell: Cell, agentMetadata: unknown): void {
  const policies = cellPolicies(cell.model.id, cell.model.getMetadata('tags'), agentMetadata);
  const old = cell.node.querySelector(':scope > .ipy-agent-policy') as HTMLDetailsElement | null;
  const key = JSON.stringify(policies);
  if (old?.dataset.policies === key) {
    return; // unchanged: an open explanation stays open
  }
  old?.remove();
  if (policies.length === 0) {
    return;
  }
  ensureStyle();
  const box = document.createElement('details');
  box.className = 'ipy-agent-policy';
  box.dataset.policies = key;
  box.open = old?.open ?? false;
  // A click here is the badge's, not the notebook's (which would select or edit the cell).
  for (const type of ['mousedown', 'dblclick']) {
    box.addEventListener(type, event => event.stopPropagation());
  }
  const summary = document.createElement('summary');
  summary.title = 'A policy you set for the agent: click to see what it means';
  for (const p of policies) {
    const badge = document.createElement('span');
    badge.className = BADGE_CLASS;
    badge.dataset.tag = p.tag;
    badge.textContent = p.badge;
    summary.appendChild(badge);
  }
  const body = document.createElement('div');
  body.className = 'ipy-agent-policy-explain';
  body.setAttribute('role', 'note');
  for (const { title, text } of explain(policies, cell.model.id)) {
    const para = document.createElement('p');
    const head = document.createElement('b');
    head.textContent = `${title}: `;
    para.append(head, text);
    body.appendChild(para);
  }
  box.append(summary, body);
  const input = cell.node.querySelector(':scope > .jp-Cell-inputWrapper');
  cell.node.insertBefore(box, input);
}

/** Each watched panel's redraw, for the Cell Tags workaround below. */
const redraws = new Set<() => void>();

/**
 * JupyterLab's Cell Tags (property inspector, 4.x) adds and removes a tag by changing the cell's
 * tags list in place, then sets it: the model finds the value equal to itself and emits no
 * metadata change (the tag is in the model, and saved). So a click or an Enter there redraws the
 * badges once that handler has run. It is the person's action that triggers it, not a timer.
 */
function afterCellTags(event: Event): void {
  const target = event.target;
  if (!(target instanceof Element) || !target.closest('.jp-CellTags')) {
    return;
  }
  if (event instanceof KeyboardEvent && event.key !== 'Enter') {
    return;
  }
  window.setTimeout(() => redraws.forEach(redraw => redraw()), 0);
}

/**
 * Keep the badges of `panel`'s cells true: drawn when the notebook loads, redrawn when a cell's
 * metadata (its tags) or the notebook's metadata changes, drawn on cells as they come.
 */
export function watchPolicies(panel: NotebookPanel): void {
  const watched = new WeakSet<object>();
  const agentMetadata = () => panel.model?.getMetadata(AGENT_KEY);
  const drawAll = () => {
    for (const cell of panel.content.widgets) {
      if (!watched.has(cell.model)) {
        watched.add(cell.model);
        cell.model.metadataChanged.connect(() => {
          const widget = panel.content.widgets.find(w => w.model === cell.model);
          if (widget) {
            drawBadges(widget, agentMetadata());
          }
        });
      }
      drawBadges(cell, agentMetadata());
    }
  };
  if (redraws.size === 0) {
    document.addEventListener('click', afterCellTags, true);
    document.addEventListener('keydown', afterCellTags, true);
  }
  redraws.add(drawAll);
  panel.disposed.connect(() => redraws.delete(drawAll));
  void panel.context.ready.then(() => {
    drawAll();
    panel.model?.metadataChanged.connect(drawAll);
    panel.model?.cells.changed.connect(drawAll);
  });
}
