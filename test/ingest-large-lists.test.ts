import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { NEVER } from '../src/domain/time.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { eventRows } from '../src/ingest/rows.js';
import { Interned } from '../src/ingest/interned.js';
import * as q from '../src/ingest/queries.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { inUuids, PLAIN_LIST_LIMIT } from '../src/storage/bound-lists.js';
import type { Store } from '../src/storage/gateway.js';
import { freshStore } from './support/engine.js';
import { report, worked } from './support/reports.js';

/**
 * Ingest reads bind whole-batch id lists; past 65,536 elements they switch to the subquery form
 * (src/storage/bound-lists.ts). These reads must return exactly what the plain form returns.
 */

const normalize = (raw: Record<string, unknown>) => {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
  if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
  return p.report;
};

const noise = (n: number) => Array.from({ length: n }, () => randomUUID());
const LARGE = PLAIN_LIST_LIMIT + 4_000;

describe('id lists longer than the plain IN form handles well', () => {
  let store: Store;
  const stored = [
    normalize(worked.r1),
    normalize(
      report({
        check_id: 'b-1',
        target: 'b.example.com',
        end_time: '2024-01-02 10:00:00',
        vulnerabilities: [{ summary: 'Open port', score: 5 }],
      }),
    ),
  ];
  const findingIds = stored.flatMap((r) => r.detections.map((d) => d.findingId));
  const targets = stored.map((r) => r.targetId);

  beforeAll(async () => {
    store = await freshStore();
    await ingestBatch(store, stored, { now: 1_800_000_000 });
  });

  it('switches form only past the limit', () => {
    expect(inUuids('id', 'ids', noise(PLAIN_LIST_LIMIT))).toBe('id IN {ids:Array(UUID)}');
    expect(inUuids('id', 'ids', noise(PLAIN_LIST_LIMIT + 1))).toBe('id IN (SELECT arrayJoin({ids:Array(UUID)}))');
  });

  it('finds the stored sources and targets among 69,536 ids', async () => {
    const sources = stored.map((r) => r.sourceId);
    expect([...(await q.existingSourceIds(store, [...noise(LARGE), ...sources]))].sort()).toEqual([...sources].sort());
    expect([...(await q.existingTargetIds(store, [...noise(LARGE), ...targets]))].sort()).toEqual([...targets].sort());
  });

  it('loads exactly the stored findings asked for among 69,536 ids, with their periods', async () => {
    const states = await q.loadFindings(
      store,
      {
        targets: [...noise(LARGE), ...targets],
        ids: [...noise(LARGE), ...findingIds],
        openFamilies: [],
        anyFamilies: [],
      },
      new Interned(),
    );
    expect([...states.keys()].sort()).toEqual([...findingIds].sort());
    const r1 = states.get(stored[0]!.detections[0]!.findingId)!;
    expect([...r1.familyPeriods.values()]).toEqual([[{ found: stored[0]!.time, fixed: NEVER }]]);
  });

  it('reads latest events, family events and event ids of 69,536 findings', async () => {
    const ids = [...noise(LARGE), ...findingIds];
    const latest = await q.latestEvents(store, ids);
    expect([...latest.keys()].sort()).toEqual([...findingIds].sort());
    expect(latest.get(stored[0]!.detections[0]!.findingId)!.score).toBe(6.5);

    const families = [...new Set(stored.map((r) => r.familyId))];
    const pairs = await q.familyEvents(store, ids, families);
    expect(pairs.map((p) => p.sourceId).sort()).toEqual(stored.map((r) => r.sourceId).sort());

    const sources = await q.familySources(store, [...noise(LARGE), ...targets], families);
    expect(sources.map((s) => s.id).sort()).toEqual(stored.map((r) => r.sourceId).sort());

    const eventIds = eventRows(stored).map((e) => e.id);
    expect([...(await q.existingEventIds(store, ids, [...noise(LARGE), ...eventIds]))].sort()).toEqual([...eventIds].sort());

    const heads = await q.familyHeads(store, [...noise(LARGE), ...targets], families);
    expect(heads.get(q.pairKey(stored[0]!.targetId, stored[0]!.familyId))).toBe(stored[0]!.time);
  });
});
