import type { Store } from '../storage/gateway.js';

/** SPEC §7.9: stored sources, targets, issues, findings and finding events. */
export async function storeSize(store: Store) {
  const [row] = await store.query<Record<string, number>>(
    `SELECT
        (SELECT count() FROM sources)            AS sources,
        (SELECT count() FROM targets FINAL)      AS targets,
        (SELECT uniqExact(id) FROM issues)       AS issues,
        (SELECT count() FROM findings FINAL)     AS findings,
        (SELECT count() FROM finding_events)     AS finding_events`,
  );
  return row!;
}
