import { beforeAll, describe, expect, it } from 'vitest';
import { activeAtParams, activeDecisionsAt } from '../src/decisions/active.js';
import { decisionTrail, makeDecision, revokeDecisions } from '../src/decisions/store.js';
import { Suppression } from '../src/decisions/suppression.js';
import { whereClause } from '../src/filters/sql.js';
import { ingestBatch } from '../src/ingest/batch.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { prepareReport } from '../src/ingest/prepare.js';
import type { Store } from '../src/storage/gateway.js';
import { epoch } from './support/api.js';
import { emptyStore, freshStore } from './support/engine.js';
import { report } from './support/reports.js';

/**
 * "Active at T" and "suppressed at T" (SPEC §12.3) run directly against the engine: one finding
 * detected daily from 2024-01-01 10:00, with the fingerprint each test chooses per detection.
 */

let store: Store;
beforeAll(async () => {
  store = await freshStore();
});

const V = { summary: 'Exposed admin panel', description: 'An admin panel answers without authentication.', score: 7.5 };

function normalize(raw: Record<string, unknown>): NormalizedReport {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
  if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
  return p.report;
}

/** Detections on 2024-01-(i+1) 10:00 with these fingerprints; returns the finding. */
async function detections(fingerprints: string[]): Promise<{ id: string; targetId: string }> {
  await emptyStore(store);
  const reports = fingerprints.map((fingerprint, i) =>
    report({
      check_id: `check-${i}`,
      end_time: `2024-01-${String(i + 1).padStart(2, '0')} 10:00:00`,
      vulnerabilities: [{ ...V, fingerprint }],
    }),
  );
  await ingestBatch(store, reports.map(normalize), { now: 1_800_000_000 });
  const [row] = await store.query<{ id: string; target: string }>(
    'SELECT toString(id) AS id, toString(target_id) AS target FROM findings FINAL',
  );
  return { id: row!.id, targetId: row!.target };
}

const ms = (iso: string) => Date.parse(iso);

/** The ids of the decisions active at `iso`. */
async function activeAt(iso: string): Promise<string[]> {
  const rows = await store.query<{ id_text: string }>(
    `SELECT toString(id) AS id_text FROM (${activeDecisionsAt('t')}) ORDER BY id_text`,
    activeAtParams('t', epoch(iso)),
  );
  return rows.map((r) => r.id_text);
}

/**
 * Whether the finding is left out (suppressed) at `iso`, by the conditions of lists (`decision=none`
 * and `any`) and the statistics' condition, over the copy of the rule's result the process keeps
 * for a store it alone writes and over the rule's statement itself (a store shared with others).
 */
async function suppressed(iso: string): Promise<boolean> {
  const answers = [];
  for (const seen of [store, { ...store, exclusive: false }]) {
    const suppression = new Suppression(seen);
    const count = async (where: { where: string[]; params: Record<string, unknown> }, from = 'findings FINAL') =>
      Number((await store.query<{ n: number }>(`SELECT count() AS n FROM ${from} ${whereClause(where)}`, where.params))[0]!.n);
    const kept = await count(await suppression.selection('none', epoch(iso)));
    const left = await count(await suppression.selection('any', epoch(iso)));
    expect(kept + left).toBe(1);
    const counted = await suppression.notSuppressedAt({}, epoch(iso));
    expect(counted ? await count(counted) : 1).toBe(kept);
    suppression.changed();
    answers.push(left === 1);
  }
  expect(answers[1]).toBe(answers[0]);
  return answers[0]!;
}

describe('a decision is active at T (SPEC §12.3)', () => {
  it('from the second it was made, not before', async () => {
    const f = await detections(['a']);
    const { decision } = await makeDecision(
      store,
      f,
      { decision: 'accepted_risk', reason: 'r', expiresAt: epoch('2024-03-01T00:00:00Z') },
      'alice',
      ms('2024-01-10T12:00:00.750Z'),
    );
    expect(await activeAt('2024-01-10T11:59:59Z')).toEqual([]);
    expect(await suppressed('2024-01-10T11:59:59Z')).toBe(false);
    expect(await activeAt('2024-01-10T12:00:00Z')).toEqual([decision.id]);
    expect(await suppressed('2024-01-10T12:00:00Z')).toBe(true);
  });

  it('until expires_at, exclusive', async () => {
    const f = await detections(['a']);
    await makeDecision(
      store,
      f,
      { decision: 'accepted_risk', reason: 'r', expiresAt: epoch('2024-02-01T00:00:00Z') },
      'alice',
      ms('2024-01-10T12:00:00Z'),
    );
    expect(await suppressed('2024-01-31T23:59:59Z')).toBe(true);
    expect(await suppressed('2024-02-01T00:00:00Z')).toBe(false);
  });

  it('until it is revoked: from the revocation second on it is not active', async () => {
    const f = await detections(['a']);
    const { decision } = await makeDecision(
      store,
      f,
      { decision: 'false_positive', reason: 'r', expiresAt: null },
      'alice',
      ms('2024-01-10T12:00:00Z'),
    );
    await revokeDecisions(store, f.id, [decision.id], 'bob', ms('2024-01-20T08:00:00.300Z'));
    expect(await suppressed('2024-01-20T07:59:59Z')).toBe(true);
    expect(await suppressed('2024-01-20T08:00:00Z')).toBe(false);
    const [trail] = await decisionTrail(store, f.id);
    expect(trail).toMatchObject({ revoked_at: '2024-01-20T08:00:00Z', revoked_by: 'bob' });
  });

  it('a replacement revokes the decision it replaces at its own instant', async () => {
    const f = await detections(['a']);
    const first = await makeDecision(
      store,
      f,
      { decision: 'false_positive', reason: 'one', expiresAt: null },
      'alice',
      ms('2024-01-10T12:00:00Z'),
    );
    const second = await makeDecision(
      store,
      f,
      { decision: 'accepted_risk', reason: 'two', expiresAt: epoch('2024-03-01T00:00:00Z') },
      'bob',
      ms('2024-01-12T12:00:00Z'),
    );
    expect(second.replaced).toEqual([first.decision.id]);
    expect(await activeAt('2024-01-11T00:00:00Z')).toEqual([first.decision.id]);
    expect(await activeAt('2024-01-12T12:00:00Z')).toEqual([second.decision.id]);
    const trail = await decisionTrail(store, f.id);
    expect(trail.map((d) => [d.reason, d.revoked_at, d.revoked_by])).toEqual([
      ['two', null, null],
      ['one', '2024-01-12T12:00:00Z', 'bob'],
    ]);
  });
});

describe('a false positive lapses when the finding changes (SPEC §12.3)', () => {
  it('at the first later detection carrying another fingerprint', async () => {
    // Detections on 01-01 … 01-05: the fingerprint changes on 01-04.
    const f = await detections(['a', 'a', 'a', 'b', 'b']);
    // Decided on 01-02 12:00, when the latest detection (01-02 10:00) carried "a".
    const { decision } = await makeDecision(
      store,
      f,
      { decision: 'false_positive', reason: 'r', expiresAt: null },
      'alice',
      ms('2024-01-02T12:00:00Z'),
    );
    expect(decision.fingerprint).toBe('a');
    expect(await suppressed('2024-01-03T10:00:00Z')).toBe(true); // another detection, same fingerprint
    expect(await suppressed('2024-01-04T09:59:59Z')).toBe(true);
    expect(await suppressed('2024-01-04T10:00:00Z')).toBe(false);
    expect(await suppressed('2024-06-01T00:00:00Z')).toBe(false);
    expect(await activeAt('2024-01-04T09:59:59Z')).toEqual([decision.id]);
    expect(await activeAt('2024-01-04T10:00:00Z')).toEqual([]);
  });

  it('not for an earlier detection with another fingerprint, nor for an accepted risk', async () => {
    const f = await detections(['b', 'a', 'a', 'c']);
    // Decided on 01-03 12:00 on fingerprint "a": the "b" of 01-01 came before.
    await makeDecision(store, f, { decision: 'false_positive', reason: 'r', expiresAt: null }, 'alice', ms('2024-01-03T12:00:00Z'));
    expect(await suppressed('2024-01-03T12:00:00Z')).toBe(true);
    expect(await suppressed('2024-01-04T10:00:00Z')).toBe(false); // "c"
    const risk = await makeDecision(
      store,
      f,
      { decision: 'accepted_risk', reason: 'r', expiresAt: epoch('2024-03-01T00:00:00Z') },
      'alice',
      ms('2024-01-03T13:00:00Z'),
    );
    expect(await activeAt('2024-01-05T00:00:00Z')).toEqual([risk.decision.id]);
  });
});
