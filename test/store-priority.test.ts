import { describe, expect, it } from 'vitest';
import { freshStore } from './support/engine.js';

/**
 * The embedded engine runs one statement at a time; the ingest worker's statements (a prioritized
 * view of the store) go before ordinary ones already waiting, so API load cannot starve ingestion,
 * but at most two in a row while ordinary ones wait (a bounded share, issue 32).
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
});
