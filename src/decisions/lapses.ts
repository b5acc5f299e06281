import { onDataChange } from '../cache/data-version.js';
import type { Store } from '../storage/gateway.js';

/**
 * When each false positive lapses (SPEC §12.3: at the first later detection of its finding with
 * another fingerprint), computed once per state of the data instead of in every statement: it
 * reads the FOUND events of every finding with a false positive, which for thousands of decisions
 * costs more than the statistics themselves. The statements then bind the decisions lapsed by
 * their instant T.
 *
 * Embedded, the process that owns the data folder sees every change: a committed batch or team
 * association (the data version's bump, src/cache/data-version.ts) and every decision forget the
 * answer. A ClickHouse server is shared with processes whose changes are not seen here: there the
 * statements compute lapses themselves (undefined below).
 */

const known = new Map<string, Promise<Map<string, number>>>();

/** Every change of the data, and every decision made, makes the lapses to be read again. */
export function forgetLapses(): void {
  known.clear();
}
onDataChange(forgetLapses);

async function readLapses(store: Store): Promise<Map<string, number>> {
  const rows = await store.query<{ id_text: string; at: number }>(
    `SELECT toString(fp.id) AS id_text, toUInt32(min(e.time)) AS at
     FROM (SELECT finding_id, time, fingerprint FROM finding_events
           WHERE finding_id IN (SELECT finding_id FROM finding_decisions WHERE decision = 'false_positive')) AS e
     INNER JOIN (SELECT id, finding_id, created_at, fingerprint FROM finding_decisions WHERE decision = 'false_positive') AS fp
       ON e.finding_id = fp.finding_id
     WHERE e.time > toStartOfSecond(fp.created_at) AND e.fingerprint != fp.fingerprint
     GROUP BY fp.id
     SETTINGS join_algorithm = 'hash'`,
  );
  return new Map(rows.map((r) => [r.id_text, r.at]));
}

/** When each lapsed false positive lapsed (decision id → epoch seconds), read once per state of the data. */
export function lapsedSince(store: Store): Promise<Map<string, number>> {
  const key = store.database;
  let lapses = known.get(key);
  if (!lapses) {
    lapses = readLapses(store);
    known.set(key, lapses);
    lapses.catch(() => known.delete(key));
  }
  return lapses;
}

/** The false positives lapsed at `t` (epoch seconds), or undefined where statements must compute them. */
export async function lapsedAt(store: Store, t: number): Promise<string[] | undefined> {
  if (store.mode !== 'embedded') return undefined;
  return [...(await lapsedSince(store))].filter(([, at]) => at <= t).map(([id]) => id);
}
