import { randomUUID } from 'node:crypto';
import { sqlMillis } from '../../src/decisions/active.js';
import type { Suppression } from '../../src/decisions/suppression.js';
import type { Store } from '../../src/storage/gateway.js';

/**
 * `--decisions N` of bench/api.ts: N triage decisions active during the measurement, on findings of
 * the dataset spread over all its targets (half false positives, half accepted risks), removed
 * afterwards so the dataset stays as built. The decision tables are append-only for the service;
 * only the benchmark empties them.
 */
export async function seedDecisions(store: Store, suppression: Suppression, n: number): Promise<void> {
  await removeDecisions(store);
  const picked = await store.query<{ id: string; target: string; fp: string }>(
    `WITH picked AS (SELECT id, target_id FROM findings FINAL ORDER BY cityHash64(id) LIMIT {n:UInt32})
     SELECT toString(f.id) AS id, toString(f.target_id) AS target, e.fp AS fp
     FROM picked AS f
     LEFT JOIN (SELECT finding_id, argMax(fingerprint, (time, check_id, pos)) AS fp FROM finding_events
                WHERE finding_id IN (SELECT id FROM picked) GROUP BY finding_id) AS e ON e.finding_id = f.id`,
    { n },
  );
  const now = Date.now();
  const rows = picked.map((f, i) => ({
    id: randomUUID(),
    finding_id: f.id,
    target_id: f.target,
    decision: i % 2 === 0 ? 'false_positive' : 'accepted_risk',
    reason: 'benchmark',
    by: 'bench',
    created_at: sqlMillis(now - 86_400_000),
    expires_at: i % 2 === 0 ? null : Math.floor(now / 1000) + 30 * 86_400,
    fingerprint: f.fp,
  }));
  for (let i = 0; i < rows.length; i += 10_000) await store.insert('finding_decisions', rows.slice(i, i + 10_000));
  suppression.decided();
  console.log(`  ${rows.length} decisions on findings of the dataset`);
}

export async function removeDecisions(store: Store): Promise<void> {
  await store.command('TRUNCATE TABLE finding_decisions');
  await store.command('TRUNCATE TABLE finding_decision_revocations');
}
