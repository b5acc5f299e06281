import { describe, expect, it } from 'vitest';
import { freshStore } from './support/engine.js';

/** Store.queryFields: rows as TabSeparated field texts, unescaped back to what was stored. */
describe('queryFields', () => {
  it('returns every stored string as it was, whatever characters it holds', async () => {
    const store = await freshStore();
    const texts = [
      'plain',
      '',
      'tab\there',
      'line\nbreak',
      'back\\slash',
      "quote's",
      'cr\rlf',
      'nul\0byte',
      'bell\bform\ff',
      '\\t literal',
      'é ü 日本',
    ];
    const rows = await store.queryFields('SELECT number, arrayJoin({texts:Array(String)}) AS text FROM numbers(1) ORDER BY text', {
      texts,
    });
    expect(rows.map((r) => r[1]).sort()).toEqual([...texts].sort());
    expect(rows.every((r) => r.length === 2 && r[0] === '0')).toBe(true);
  });

  it('returns no rows for an empty result', async () => {
    const store = await freshStore();
    expect(await store.queryFields('SELECT 1 WHERE 0')).toEqual([]);
  });
});
