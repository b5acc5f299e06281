import { describe, expect, it } from 'vitest';
import { SHORT_TURNS_IN_A_ROW } from '../src/storage/engine-turns.js';
import { freshStore } from './support/engine.js';

/**
 * The embedded engine runs one statement at a time; the ingest worker's statements (a prioritized
 * view of the store) go before ordinary ones already waiting, so API load cannot starve ingestion,
 * but at most two in a row while ordinary ones wait (a bounded share, issue 32). Among the others, a
 * statement whose text lately cost the engine little goes before the costly ones waiting, a bounded
 * few in a row.
 */

describe('the prioritized view of the embedded store', () => {
  it('given ordinary statements waiting behind a slow one, when a prioritized statement arrives, then it runs before them', async () => {
    const store = await freshStore();
    const urgent = store.prioritized();
    const order: string[] = [];
    const slow = store.query('SELECT sleep(0.5) AS s').then(() => order.push('slow'));
    const ordinary = [1, 2, 3].map((i) => store.query(`SELECT ${i} AS n`).then(() => order.push(`ordinary ${i}`)));
    const first = urgent.query('SELECT 0 AS n').then(() => order.push('prioritized'));
    await Promise.all([slow, ...ordinary, first]);
    expect(order).toEqual(['slow', 'prioritized', 'ordinary 1', 'ordinary 2', 'ordinary 3']);
  });

  it('given prioritized and ordinary statements waiting, when they take turns, then an ordinary one runs after at most two prioritized ones', async () => {
    const store = await freshStore();
    const urgent = store.prioritized();
    const order: string[] = [];
    const slow = store.query('SELECT sleep(0.5) AS s').then(() => order.push('slow'));
    const batch = [1, 2, 3, 4].map((i) => urgent.query(`SELECT ${i} AS n`).then(() => order.push(`prioritized ${i}`)));
    const api = [1, 2].map((i) => store.query(`SELECT ${i} AS n`).then(() => order.push(`ordinary ${i}`)));
    await Promise.all([slow, ...batch, ...api]);
    expect(order).toEqual(['slow', 'prioritized 1', 'prioritized 2', 'ordinary 1', 'prioritized 3', 'prioritized 4', 'ordinary 2']);
  });

  it('given no prioritized statement, when ordinary ones wait, then they run in the order given', async () => {
    const store = await freshStore();
    const order: number[] = [];
    await Promise.all([1, 2, 3, 4].map((i) => store.query(`SELECT ${i} AS n`).then(() => order.push(i))));
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('given costly statements waiting, when statements that lately cost little arrive, then a few of them run first, and a costly one after at most SHORT_TURNS_IN_A_ROW', async () => {
    const store = await freshStore();
    const costly = "SELECT sleep(0.1) AS s, 'costly' AS k";
    const cheap = "SELECT 'cheap' AS k, {i:UInt8} AS i";
    // What each text costs, learnt from its runs.
    await store.query(costly);
    for (const i of [0, 1, 2]) await store.query(cheap, { i });
    const order: string[] = [];
    const slow = store.query('SELECT sleep(0.5) AS s').then(() => order.push('slow'));
    const costlyOnes = [1, 2].map((i) => store.query(costly).then(() => order.push(`costly ${i}`)));
    const cheapOnes = [1, 2, 3, 4, 5, 6].map((i) => store.query(cheap, { i }).then(() => order.push(`cheap ${i}`)));
    await Promise.all([slow, ...costlyOnes, ...cheapOnes]);
    expect(SHORT_TURNS_IN_A_ROW).toBe(4);
    expect(order).toEqual(['slow', 'cheap 1', 'cheap 2', 'cheap 3', 'cheap 4', 'costly 1', 'cheap 5', 'cheap 6', 'costly 2']);
  });
});
