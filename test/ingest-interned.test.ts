import { describe, expect, it } from 'vitest';
import { Interned } from '../src/ingest/interned.js';

const bound = (shared: Interned) => ({ list: (l: string[]) => shared.list(l), text: (s: string) => shared.text(s) });

describe('interned values', () => {
  it('gives equal lists one shared instance, and different lists their own', () => {
    const { list } = bound(new Interned());
    const a = list(['Upgrade the affected component.', 'Restart it.']);
    const b = list(['Upgrade the affected component.', 'Restart it.']);
    const c = list(['Restart it.', 'Upgrade the affected component.']);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(c).toEqual(['Restart it.', 'Upgrade the affected component.']);
  });

  it('returns texts equal to the ones given, also once its budget has been used up and it starts over', () => {
    const { list, text } = bound(new Interned());
    const row = 'f0c1\tdetails of a finding that repeat\tmore';
    const field = row.split('\t')[1]!;
    expect(text(field)).toBe('details of a finding that repeat');
    // Far more than the budget of remembered characters: the memory is cleared and refilled.
    for (let i = 0; i < 12_000; i++) expect(text(`${'x'.repeat(1000)}${i}`)).toBe(`${'x'.repeat(1000)}${i}`);
    expect(text(field)).toBe('details of a finding that repeat');
    expect(text('')).toBe('');
    expect(list([])).toEqual([]);
  });

  it('shares values within one owner only (each batcher has its own)', () => {
    const one = new Interned();
    const other = new Interned();
    const labels = one.list(['a', 'b']);
    expect(one.list(['a', 'b'])).toBe(labels);
    expect(other.list(['a', 'b'])).not.toBe(labels);
  });
});
