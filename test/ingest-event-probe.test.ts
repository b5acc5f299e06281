import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ingestBatch } from '../src/ingest/batch.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { prepareReport } from '../src/ingest/prepare.js';
import * as q from '../src/ingest/queries.js';
import { detectionRows } from '../src/ingest/rows.js';
import type { Store } from '../src/storage/gateway.js';
import { freshStore } from './support/engine.js';
import { report, V, worked } from './support/reports.js';
import { snapshot } from './support/snapshot.js';

/**
 * Every batch asks which of its reports an earlier attempt began to write, with one event per
 * report (its first detection's: src/ingest/batch-writes.ts). An attempt that stopped partway
 * through a report's events wrote a prefix of them in detection order; the batch writes the rest,
 * once.
 */

const normalize = (raw: Record<string, unknown>): NormalizedReport => {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
  if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
  return p.report;
};

const other = { summary: 'Exposed admin panel', description: 'Admin UI reachable', score: 9.1 };
const third = { summary: 'Outdated TLS', description: 'TLS 1.0 enabled', score: 4.2 };
const wide = normalize(
  report({ check_id: 'w-1', target: 'w.example.com', end_time: '2024-01-02 09:00:00', vulnerabilities: [V, other, third] }),
);
const plain = normalize(worked.r1);
const NOW = 1_800_000_000;

const probe = (r: NormalizedReport) => ({ findingId: r.detections[0]!.findingId, sourceId: r.sourceId, time: r.time });

let store: Store;
let clean: Store;
beforeEach(async () => {
  [store, clean] = [await freshStore(), await freshStore()];
});
afterEach(async () => {
  await store.close();
  await clean.close();
});

describe('the per-report probe of stored events', () => {
  it('names the sources with a stored event, and no other', async () => {
    await ingestBatch(store, [plain], { now: NOW });
    expect([...(await q.sourcesWithEvents(store, [probe(plain), probe(wide)]))]).toEqual([plain.sourceId]);
    // A probe matches by its finding, time and source: the same finding at another time is not this report.
    expect(await q.sourcesWithEvents(store, [{ ...probe(plain), time: plain.time + 1 }])).toEqual(new Set());
    expect(await q.sourcesWithEvents(store, [])).toEqual(new Set());
  });

  it('completes a report whose earlier attempt wrote only the first of its events, without writing any twice', async () => {
    expect(wide.detections).toHaveLength(3);
    // The earlier attempt: the report's first detection reached finding_events, the others did not.
    const prefix = detectionRows(
      [wide],
      () => false,
      (findingId) => findingId === wide.detections[0]!.findingId,
    );
    expect(prefix[0]!.finding_ids).toHaveLength(1);
    await store.insert('report_detections', prefix);
    expect([...(await q.sourcesWithEvents(store, [probe(wide)]))]).toEqual([wide.sourceId]);

    // Not in recovery: the same report delivered again, by another job.
    await ingestBatch(store, [wide, plain], { now: NOW });
    await ingestBatch(clean, [wide, plain], { now: NOW });
    const [actual, expected] = [await snapshot(store), await snapshot(clean)];
    expect(actual.sizes!.events).toBe(4);
    expect(actual.sizes!.distinct_events).toBe(4);
    expect(actual).toEqual(expected);
  });
});
