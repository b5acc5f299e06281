import { describe, expect, it } from 'vitest';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { silentLogger } from '../src/log.js';
import { freshStore } from './support/engine.js';
import { ownedStore } from './support/owned-store.js';
import { report, V } from './support/reports.js';

/**
 * Commit pacing (INGEST_COMMIT_INTERVAL_MS, issue 32): under a trickle, reports gather into one
 * batch per interval; a full batch, and a drain, do not wait for the interval.
 */

const scan = (i: number) =>
  report({ check_id: `scan-${i}`, target: `t${i}.example.com`, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pacedBatcher(batchSize: number, commitIntervalMs: number) {
  const store = await freshStore();
  const batches: { reports: number; at: number }[] = [];
  const batcher = new ReportBatcher({
    store,
    ...ownedStore(store),
    batchSize,
    waitMs: 1,
    commitIntervalMs,
    concurrency: 1,
    maxEventAgeDays: 0,
    log: silentLogger,
    onCommitted: async (r) => void batches.push({ reports: r.counts.reports, at: performance.now() }),
  });
  return { batcher, batches };
}

describe('commit pacing', () => {
  it('given a trickle of reports, when the interval has not passed since the last batch, then they wait and commit as one batch', async () => {
    // Longer than a batch of one takes on a loaded host, so the trickle arrives within it.
    const INTERVAL = 6000;
    const { batcher, batches } = await pacedBatcher(100, INTERVAL);
    const started = performance.now();
    // After an idle time the first report goes at once (after the 1 ms gathering wait).
    await batcher.submit({ data: scan(0), attemptsStarted: 1 });
    const trickle: Promise<unknown>[] = [];
    for (let i = 1; i <= 5; i++) {
      trickle.push(batcher.submit({ data: scan(i), attemptsStarted: 1 }));
      await sleep(50);
    }
    await Promise.all(trickle);
    expect(batches.map((b) => b.reports)).toEqual([1, 5]);
    // The second batch started no sooner than the interval after the first one started.
    expect(batches[1]!.at - started).toBeGreaterThanOrEqual(INTERVAL);
    await batcher.drain();
  }, 60_000);

  it('given a full batch pending, when the interval has not passed, then it commits at once', async () => {
    const INTERVAL = 60_000;
    const { batcher, batches } = await pacedBatcher(3, INTERVAL);
    const started = performance.now();
    await batcher.submit({ data: scan(10), attemptsStarted: 1 });
    // A backlog: two full batches arrive at once; pacing would hold them a minute.
    await Promise.all([11, 12, 13, 14, 15, 16].map((i) => batcher.submit({ data: scan(i), attemptsStarted: 1 })));
    expect(batches.map((b) => b.reports)).toEqual([1, 3, 3]);
    expect(performance.now() - started).toBeLessThan(INTERVAL / 2);
    await batcher.drain();
  });

  it('given reports waiting for the interval, when the batcher is drained (shutdown), then they commit at once', async () => {
    const INTERVAL = 60_000;
    const { batcher, batches } = await pacedBatcher(100, INTERVAL);
    const started = performance.now();
    await batcher.submit({ data: scan(20), attemptsStarted: 1 });
    const waiting = batcher.submit({ data: scan(21), attemptsStarted: 1 });
    await batcher.drain();
    expect(await waiting).toEqual({ outcome: 'ingested' });
    expect(batches.map((b) => b.reports)).toEqual([1, 1]);
    expect(performance.now() - started).toBeLessThan(INTERVAL / 2);
  });
});
