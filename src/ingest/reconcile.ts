import { SEVERITIES } from '../domain/severity.js';
import type { Store } from '../storage/gateway.js';
import { inUuids } from '../storage/bound-lists.js';

/**
 * Counters and copies that materialized views derive from each findings insert (sql/0006, 0009,
 * 0011): open/fixed counts per target, per team × target and per issue, and the team copies of the
 * findings. ClickHouse writes an insert's own part and then pushes the block to each view, one after
 * the other: a process killed in between leaves a findings version without some of what its views
 * derive, and the retry, finding the version already written, writes nothing that would fire them.
 * So a batch that may retry half-written work (recovery) brings each of them back to what the
 * targets' current findings say, by inserting the difference: a no-op when nothing was lost, and
 * idempotent, like the team copies of POST /targets (src/teams/team-copies.ts).
 *
 * The caller holds the targets' locks, so their findings do not change meanwhile. Issue counters
 * also count other targets' findings: an issue's difference is computed in one statement from its
 * findings and its counter, which another process's batch could change between its findings part
 * and its views' pushes (server mode with several workers, during a recovery only).
 */

const COUNTERS = (['open', 'fixed'] as const).flatMap((status) =>
  SEVERITIES.map((s) => ({ name: `${status}_${s}`, status: status.toUpperCase(), severity: s })),
);
const names = COUNTERS.map((c) => c.name);
const expected = COUNTERS.map((c) => `toInt64(countIf(status = '${c.status}' AND severity = '${c.severity}')) AS ${c.name}`).join(
  ',\n           ',
);
const summed = names.map((c) => `sum(${c}) AS ${c}`).join(', ');
const negated = names.map((c) => `-${c} AS ${c}`).join(', ');
const changed = names.map((c) => `${c} != 0`).join(' OR ');

/** Each statement, in order (the team counters are checked against the targets' corrected ones), over `targets`' findings. */
const STATEMENTS: ((targets: string) => string)[] = [
  // Per target: what its current findings count, minus what the counters hold.
  (targets) =>
    `INSERT INTO finding_counts
      SELECT target_id, ${summed}
      FROM
      (
          SELECT target_id, ${expected}
          FROM findings FINAL WHERE ${targets} GROUP BY target_id
          UNION ALL
          SELECT target_id, ${negated} FROM finding_counts WHERE ${targets}
      )
      GROUP BY target_id
      HAVING ${changed}`,
  // Per team of each target, against the target's (now right) counters.
  (targets) =>
    `INSERT INTO team_finding_counts
      SELECT team, target_id, ${summed}
      FROM
      (
          SELECT t.team AS team, target_id, ${names.join(', ')}
          FROM finding_counts
          INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams WHERE ${targets}) AS t USING (target_id)
          WHERE ${targets}
          UNION ALL
          SELECT team, target_id, ${negated} FROM team_finding_counts WHERE ${targets}
      )
      GROUP BY team, target_id
      HAVING ${changed}`,
  // The team copies are versioned rows: the current versions again (a copy that arrived replaces nothing).
  (targets) =>
    `INSERT INTO team_findings
      SELECT t.team AS team, target_id, id, issue_id, affected_resource, version, status, score, severity, found_at, fixed_at,
             first_found_at, last_found_at, closed_exposure, ttr_sum, ttr_count
      FROM findings FINAL
      INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams WHERE ${targets}) AS t USING (target_id)
      WHERE ${targets}`,
  // Per issue with a finding on these targets: all its findings, minus its counter.
  (targets) =>
    `INSERT INTO issue_finding_counts
      SELECT issue_id, sum(open) AS open, sum(fixed) AS fixed
      FROM
      (
          SELECT issue_id, toInt64(countIf(status = 'OPEN')) AS open, toInt64(countIf(status = 'FIXED')) AS fixed
          FROM findings FINAL
          WHERE issue_id IN (SELECT DISTINCT issue_id FROM findings WHERE ${targets})
          GROUP BY issue_id
          UNION ALL
          SELECT issue_id, -open AS open, -fixed AS fixed FROM issue_finding_counts
          WHERE issue_id IN (SELECT DISTINCT issue_id FROM findings WHERE ${targets})
      )
      GROUP BY issue_id
      HAVING open != 0 OR fixed != 0`,
];

export async function reconcileDerived(store: Store, targetIds: string[]): Promise<void> {
  if (targetIds.length === 0) return;
  const targets = inUuids('target_id', 'targets', targetIds);
  for (const statement of STATEMENTS) await store.command(statement(targets), { targets: targetIds });
}
