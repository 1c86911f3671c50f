/**
 * A click on a `[cell N]` citation in the model's answer goes to cell N of the panel's notebook
 * (ipy_agent/ui/citations.py writes the link); any other click is left alone.
 */
import { describe, expect, it } from 'vitest';
import { CITE_ATTRIBUTE, CiteTarget, citedCell, onCitationClick } from '../src/cite';

/** A stand-in element: its attributes, and the ancestors `closest` walks up to (itself first). */
function element(attributes: Record<string, string>, tag = 'a', parent: CiteTarget | null = null): CiteTarget {
  const self: CiteTarget = {
    closest(selector: string) {
      const isCite =
        tag === 'a' && (CITE_ATTRIBUTE in attributes || (attributes.class ?? '').split(' ').includes('ipy-agent-cite'));
      if (selector.includes(CITE_ATTRIBUTE) && isCite) {
        return self;
      }
      return parent ? parent.closest(selector) : null;
    },
    getAttribute: (name: string) => attributes[name] ?? null
  };
  return self;
}

const kernelLink = (n: string) =>
  element({ class: 'ipy-agent-cite', href: `#ipy-agent-cell-${n}`, [CITE_ATTRIBUTE]: n });

function click(target: unknown, more: Partial<{ button: number; ctrlKey: boolean }> = {}) {
  const seen = { prevented: false, stopped: false };
  return {
    seen,
    event: {
      target,
      ...more,
      preventDefault: () => void (seen.prevented = true),
      stopPropagation: () => void (seen.stopped = true)
    }
  };
}

function notebook(cells: number) {
  const went: number[] = [];
  return { went, nb: { cellCount: () => cells, scrollTo: (i: number) => void went.push(i) } };
}

describe('citedCell', () => {
  it('reads the cell from the link the kernel writes, or from its href when the attribute was dropped', () => {
    expect(citedCell(kernelLink('3'))).toBe(3);
    expect(citedCell(element({ class: 'ipy-agent-cite', href: '#ipy-agent-cell-12' }))).toBe(12);
  });

  it('finds the link from a node inside it (a click lands on its text)', () => {
    expect(citedCell(element({}, 'span', kernelLink('4')))).toBe(4);
  });

  it('is null for anything else: another link, no element, a bad number', () => {
    expect(citedCell(element({ href: 'https://example.org' }))).toBeNull();
    expect(citedCell(null)).toBeNull();
    expect(citedCell('text')).toBeNull();
    expect(citedCell(kernelLink('0'))).toBeNull();
    expect(citedCell(kernelLink('3"x'))).toBeNull();
  });
});

describe('onCitationClick', () => {
  it('goes to the cited cell (1-based to 0-based) and keeps the browser off the href', () => {
    const { went, nb } = notebook(6);
    const { seen, event } = click(kernelLink('4'));
    expect(onCitationClick(event, nb)).toBe(3);
    expect(went).toEqual([3]);
    expect(seen).toEqual({ prevented: true, stopped: true });
  });

  it('goes to the last cell when the cited one is past the end (cells were deleted since)', () => {
    const { went, nb } = notebook(2);
    expect(onCitationClick(click(kernelLink('9')).event, nb)).toBe(1);
    expect(went).toEqual([1]);
  });

  it('leaves other clicks alone: another link, a modified or middle click', () => {
    const { went, nb } = notebook(6);
    const other = click(element({ href: 'https://example.org' }));
    expect(onCitationClick(other.event, nb)).toBeNull();
    expect(other.seen.prevented).toBe(false);
    expect(onCitationClick(click(kernelLink('2'), { ctrlKey: true }).event, nb)).toBeNull();
    expect(onCitationClick(click(kernelLink('2'), { button: 1 }).event, nb)).toBeNull();
    expect(went).toEqual([]);
  });
});
