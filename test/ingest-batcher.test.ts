import { describe, expect, it } from 'vitest';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { silentLogger } from '../src/log.js';
import { freshStore } from './support/engine.js';
import { report, V, worked, type VulnSpec } from './support/reports.js';
import { contextFromHistory, snapshot, storedContext } from './support/snapshot.js';
import { directBatchesInFlight } from '../src/cli/import.js';
import { ownedStore } from './support/owned-store.js';

const scan = (i: number) =>
  report({ check_id: `scan-${i}`, target: `t${i}.example.com`, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the report batcher', () => {
  it('while a batch runs, gathers later reports into one full batch instead of starting a partial one', async () => {
    const store = await freshStore();
    const sizes: number[] = [];
    const batcher = new ReportBatcher({
      store: store,
      ...ownedStore(store),
      batchSize: 4,
      waitMs: 1,
      concurrency: 2,
      maxEventAgeDays: 0,
      log: silentLogger,
      onCommitted: async (r) => void sizes.push(r.counts.reports),
    });
    // The first report goes alone after the 1 ms wait; the next two arrive while its batch (about
    // ten statements on the engine) runs, a free slot notwithstanding.
    const first = batcher.submit({ data: scan(0), attemptsStarted: 1 });
    await sleep(5);
    const second = batcher.submit({ data: scan(1), attemptsStarted: 1 });
    await sleep(5);
    const third = batcher.submit({ data: scan(2), attemptsStarted: 1 });
    expect(await Promise.all([first, second, third])).toEqual([{ outcome: 'ingested' }, { outcome: 'ingested' }, { outcome: 'ingested' }]);
    expect(sizes).toEqual([1, 2]);

    await batcher.drain();
  });

  it("with a direct import's batches in flight, ends where applying one report at a time does", async () => {
    // 3 targets × 12 daily scans, each vulnerability present on some days only: reopens, fixes and
    // several reports of one target among the batches in flight at once.
    const vulns: VulnSpec[] = ['A', 'B', 'C', 'D'].map((x, i) => ({ summary: `Issue ${x}`, score: 2 + 2.5 * i }));
    const history = Array.from({ length: 36 }, (_, n) => {
      const [t, day] = [n % 3, Math.floor(n / 3) + 1];
      return report({
        check_id: `scan-${t}-${day}`,
        target: `t${t}.example.com`,
        end_time: `2024-01-${String(day).padStart(2, '0')} 10:00:00`,
        vulnerabilities: vulns.filter((_, i) => (day * (t + 1) + i) % (i + 2) !== 0),
      });
    });
    const [together, oneByOne] = [await freshStore(), await freshStore()];
    const concurrency = directBatchesInFlight(1);
    expect(concurrency).toBeGreaterThan(2);
    const batched = new ReportBatcher({
      store: together,
      ...ownedStore(together),
      batchSize: 3,
      waitMs: 1,
      concurrency,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    const single = new ReportBatcher({
      store: oneByOne,
      ...ownedStore(oneByOne),
      batchSize: 1,
      waitMs: 1,
      concurrency: 1,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    const outcomes = await Promise.all(history.map((data) => batched.submit({ data, attemptsStarted: 1 })));
    expect(outcomes.every((o) => o.outcome === 'ingested')).toBe(true);
    for (const data of history) await single.submit({ data, attemptsStarted: 1 });
    const expected = await snapshot(oneByOne);
    expect(expected.findings.some((f) => (f.found as number[]).length > 1)).toBe(true); // reopens happened
    expect(await snapshot(together)).toEqual(expected);
    await Promise.all([batched.drain(), single.drain()]);
  });

  it('never derives reports of one target in two batches side by side (a process owning its store)', async () => {
    const store = await freshStore();
    const batcher = new ReportBatcher({
      store: store,
      ...ownedStore(store),
      batchSize: 1,
      waitMs: 1,
      concurrency: 2,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    // Two batches start together; r3, the clean scan after r1, must see r1's finding to fix it
    // (with every lock granted to both batches, the finding stays OPEN).
    const outcomes = await Promise.all([worked.r1, worked.r3].map((data) => batcher.submit({ data, attemptsStarted: 1 })));
    expect(outcomes).toEqual([{ outcome: 'ingested' }, { outcome: 'ingested' }]);
    const rows = await store.query<{ status: string; fixed: number[] }>(
      'SELECT status, arrayMap(x -> toUInt32(x), fixed_at) AS fixed FROM findings FINAL',
    );
    expect(rows).toEqual([{ status: 'FIXED', fixed: [Date.parse('2024-01-03T10:00:00Z') / 1000] }]);
    await batcher.drain();
  });

  it('writes an issue object only when what it shows changes, not for every later claim', async () => {
    const store = await freshStore();
    const written: number[] = [];
    const counting = {
      ...store,
      insert: (table: string, rows: readonly object[]) => (
        table === 'issue_objects' && written.push(rows.length), store.insert(table, rows)
      ),
    };
    const batcher = new ReportBatcher({
      store: counting,
      ...ownedStore(counting),
      batchSize: 1,
      waitMs: 1,
      concurrency: 1,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    const day = (d: number, labels: string[]) =>
      batcher.submit({
        data: report({ check_id: `scan-${d}`, end_time: `2024-01-0${d} 10:00:00`, vulnerabilities: [{ ...V, labels }] }),
        attemptsStarted: 1,
      });
    await day(1, ['TLS']);
    await day(2, ['TLS']); // a later labels claim that says the same
    await day(3, ['TLS', 'pci']);
    expect(written).toEqual([1, 0, 1]);
    const objects = await store.query<{ labels: string[] }>('SELECT labels FROM issue_objects');
    expect(objects).toEqual([{ labels: ['TLS', 'pci'] }]);
    // The issue of record says the same.
    expect(await store.query<{ labels: string[] }>('SELECT labels FROM issues_current')).toEqual(objects);
    await batcher.drain();
  });

  it("rewrites the lists' totals after a batch that changes a status, and only then", async () => {
    const store = await freshStore();
    let rewrites = 0;
    const counting = {
      ...store,
      command: (sql: string) => (sql.includes('INSERT INTO finding_total_values') && rewrites++, store.command(sql)),
    };
    const batcher = new ReportBatcher({
      store: counting,
      ...ownedStore(counting),
      batchSize: 1,
      waitMs: 1,
      concurrency: 1,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    const other = { summary: 'Exposed admin panel', score: 9.1 };
    const day = (d: number, vulnerabilities: VulnSpec[]) =>
      batcher.submit({ data: report({ check_id: `scan-${d}`, end_time: `2024-01-0${d} 10:00:00`, vulnerabilities }), attemptsStarted: 1 });
    const totals = async () => {
      const [stored, history] = [await storedContext(store), await contextFromHistory(store)];
      expect(stored.totalValues).toEqual(history.totals);
      return stored.totalValues;
    };

    await day(1, [V, other]); // two new OPEN findings
    expect([rewrites, await totals()]).toEqual([1, [{ scope: 'all', open_n: 2, fixed_n: 0 }]]);
    await day(2, [V]); // one of them fixed
    expect([rewrites, await totals()]).toEqual([2, [{ scope: 'all', open_n: 1, fixed_n: 1 }]]);
    await day(3, [{ ...V, score: 9.8 }]); // a new version (score and severity), its status unchanged
    expect(await store.query('SELECT count() AS n FROM findings')).toEqual([{ n: 4 }]);
    expect([rewrites, await totals()]).toEqual([2, [{ scope: 'all', open_n: 1, fixed_n: 1 }]]);
    await batcher.drain();
  });
});
