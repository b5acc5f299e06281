import { eventId } from '../../src/domain/ids.js';
import type { Store } from '../../src/storage/gateway.js';

/**
 * Everything ingestion derives, read straight from the store, in a stable order: the state two
 * deliveries of the same history must agree on.
 */
export async function snapshot(store: Store) {
  const findings = await store.query<Record<string, unknown>>(
    `SELECT toString(id) AS id, toString(target_id) AS target, toString(issue_id) AS issue, affected_resource,
            toString(status) AS status, score, toString(severity) AS severity,
            arrayMap(t -> toUInt32(t), found_at) AS found, arrayMap(t -> toUInt32(t), fixed_at) AS fixed,
            closed_exposure, ttr_sum, ttr_count, arraySort(arrayMap(p -> (toString(p.1), toUInt32(p.2), toUInt32(p.3)), family_periods)) AS fp
     FROM findings FINAL ORDER BY id`,
  );
  // Each finding's latest FOUND event (its current attributes and last source, SPEC §3.5.6).
  const latest = await store.query<Record<string, unknown>>(
    `SELECT toString(finding_id) AS finding, argMax((toString(source_id), score, details, resources, fingerprint), (time, check_id, pos)) AS event
     FROM finding_events GROUP BY finding_id ORDER BY finding`,
  );
  // The materialized counters, unfolded to (target, severity, status, n) rows.
  const counts = await store.query<Record<string, unknown>>(
    `SELECT target, c.1 AS severity, c.2 AS status, c.3 AS n
     FROM
     (
         SELECT toString(target_id) AS target,
                arrayJoin([${['critical', 'high', 'medium', 'low', 'informational']
                  .flatMap((s) => [`('${s}', 'OPEN', sum(open_${s}))`, `('${s}', 'FIXED', sum(fixed_${s}))`])
                  .join(', ')}]) AS c
         FROM finding_counts GROUP BY target_id
     )
     WHERE n != 0 ORDER BY target, severity, status`,
  );
  // The materialized counters per issue (migration 0011).
  const issueCounts = await store.query<Record<string, unknown>>(
    `SELECT toString(issue_id) AS issue, sum(open) AS open_n, sum(fixed) AS fixed_n
     FROM issue_finding_counts GROUP BY issue_id HAVING open_n != 0 OR fixed_n != 0 ORDER BY issue`,
  );
  const issues = await store.query<Record<string, unknown>>(
    `SELECT toString(id) AS id, summary, description, cwe_id, recommendations, reference_links, labels
     FROM issues_current ORDER BY id`,
  );
  const [sizes] = await store.query<Record<string, number>>(
    `SELECT (SELECT count() FROM sources) AS sources,
            (SELECT count() FROM finding_events) AS events,
            (SELECT uniqExact(id) FROM finding_events) AS distinct_events,
            (SELECT count() FROM targets FINAL) AS targets`,
  );
  return { findings, latest, counts, issueCounts, issues, sizes };
}

/** Open/fixed counts recomputed from the latest finding versions (what the MV must equal). */
export async function countsFromFindings(store: Store) {
  return store.query<Record<string, unknown>>(
    `SELECT toString(target_id) AS target, toString(severity) AS severity, toString(status) AS status, count() AS n
     FROM findings FINAL GROUP BY target_id, severity, status ORDER BY target, severity, status`,
  );
}

/** OPEN and FIXED findings per issue recomputed from the latest finding versions. */
export async function issueCountsFromFindings(store: Store) {
  return store.query<Record<string, unknown>>(
    `SELECT toString(issue_id) AS issue, countIf(status = 'OPEN') AS open_n, countIf(status = 'FIXED') AS fixed_n
     FROM findings FINAL GROUP BY issue_id ORDER BY issue`,
  );
}

/** Findings whose stored score is not their latest FOUND event's score (must be none). */
export async function scoreMismatches(store: Store) {
  return store.query<Record<string, unknown>>(
    `SELECT toString(f.id) AS id, f.score AS stored, e.score AS latest
     FROM (SELECT id, score FROM findings FINAL) AS f
     INNER JOIN (SELECT finding_id, argMax(score, (time, check_id, pos)) AS score FROM finding_events GROUP BY finding_id) AS e
     ON e.finding_id = f.id
     WHERE f.score != e.score`,
  );
}

/**
 * What the tables of sql/0012 hold (what findings pages show besides their rows), in a stable
 * order and in the shape contextFromHistory recomputes: the latest version of each key in the
 * cluster layout.
 */
export async function storedContext(store: Store) {
  const latest = await store.query<Record<string, unknown>>(
    `SELECT toString(finding_id) AS finding, toUInt32(time) AS t, check_id, pos, toString(source_id) AS source, source_name,
            component, options, details, impact_details, resources, affected_resource_string
     FROM ${store.keyed.latest('finding_latest_events')} ORDER BY finding`,
  );
  const issues = await store.query<Record<string, unknown>>(
    `SELECT toString(id) AS issue, summary, description, cwe_id, recommendations, reference_links, labels
     FROM ${store.keyed.latest('issue_objects')} ORDER BY issue`,
  );
  const targets = await store.query<Record<string, unknown>>(
    `SELECT toString(id) AS target, identifier, teams FROM ${store.keyed.latest('target_objects')} ORDER BY target`,
  );
  const totals = await store.query<Record<string, unknown>>(
    `SELECT scope, sum(open) AS open_n, sum(fixed) AS fixed_n FROM finding_totals
     GROUP BY scope HAVING open_n != 0 OR fixed_n != 0 ORDER BY scope`,
  );
  // The same sums kept by key (sql/0014) as of their last rewrite (src/findings/totals.ts).
  const totalValues = await store.query<Record<string, unknown>>(
    `SELECT scope, open AS open_n, fixed AS fixed_n FROM ${store.keyed.latest('finding_total_values')} WHERE open != 0 OR fixed != 0 ORDER BY scope`,
  );
  return { latest, issues, targets, totals, totalValues };
}

/** The same, recomputed from the history it derives from (events, claims, targets, findings). */
export async function contextFromHistory(store: Store): Promise<Awaited<ReturnType<typeof storedContext>>> {
  const latest = await store.query<Record<string, unknown>>(
    `SELECT toString(finding_id) AS finding, toUInt32(e.1) AS t, e.2 AS check_id, e.3 AS pos, toString(e.4) AS source,
            e.5 AS source_name, e.6 AS component, e.7 AS options, e.8 AS details, e.9 AS impact_details, e.10 AS resources,
            e.11 AS affected_resource_string
     FROM
     (
         SELECT finding_id,
                argMax((time, check_id, pos, source_id, toString(source_name), toString(component), toString(options), details,
                        impact_details, resources, affected_resource_string), (time, check_id, pos)) AS e
         FROM finding_events GROUP BY finding_id
     )
     ORDER BY finding`,
  );
  const issues = await store.query<Record<string, unknown>>(
    `SELECT toString(id) AS issue, summary, description, cwe_id, recommendations, reference_links, labels
     FROM issues_current ORDER BY issue`,
  );
  const targets = await store.query<Record<string, unknown>>(
    `SELECT toString(t.id) AS target, t.identifier AS identifier,
            arrayMap(x -> x.2, arraySort(arrayFilter(x -> x.1 > 0, groupArray((a.seq, a.team))))) AS teams
     FROM targets AS t FINAL
     LEFT JOIN (SELECT target_id, team, min(associated_seq) AS seq FROM target_teams GROUP BY target_id, team) AS a ON a.target_id = t.id
     GROUP BY t.id, t.identifier ORDER BY target`,
  );
  const totals = await store.query<Record<string, unknown>>(
    `SELECT scope, countIf(status = 'OPEN') AS open_n, countIf(status = 'FIXED') AS fixed_n
     FROM
     (
         SELECT 'all' AS scope, status FROM findings FINAL
         UNION ALL
         SELECT concat('team:', a.team) AS scope, f.status AS status
         FROM findings AS f FINAL
         INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS a ON a.target_id = f.target_id
     )
     GROUP BY scope HAVING open_n != 0 OR fixed_n != 0 ORDER BY scope`,
  );
  return { latest, issues, targets, totals, totalValues: totals };
}

/** Stored FOUND events whose id is not eventId(finding, source) (must be none: sql/0013 derives them). */
export async function eventIdMismatches(store: Store) {
  const rows = await store.query<{ id: string; finding_id: string; source_id: string }>(
    'SELECT id, finding_id, source_id FROM finding_events',
  );
  return rows.filter((r) => r.id !== eventId(r.finding_id, r.source_id));
}
