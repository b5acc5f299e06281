import { SEVERITIES } from '../domain/severity.js';
import type { Store } from '../storage/gateway.js';

/**
 * The team-clustered copies of findings and of their counters (sql/0009_team_copies.sql). New
 * finding versions and counter deltas reach them through materialized views; these copies cover
 * what the views cannot see: what was stored before a target joined a team. Both are idempotent,
 * so copying again (a retried POST /targets) changes nothing.
 */

const FINDING_COLUMNS = `target_id, id, issue_id, affected_resource, version, status, score, severity, found_at, fixed_at,
       first_found_at, last_found_at, closed_exposure, ttr_sum, ttr_count`;

const COUNTERS = (['open', 'fixed'] as const).flatMap((status) => SEVERITIES.map((s) => `${status}_${s}`));

/**
 * Copies one target's current findings and counters into each of `teams`. The caller holds the
 * target's lock, so neither changes meanwhile. Findings are versioned rows (a second copy
 * replaces the first); counters are summed, so each team receives the difference between the
 * target's counters and what the team already holds for it.
 */
export async function copyTargetToTeams(store: Store, targetId: string, teams: string[]): Promise<void> {
  if (teams.length === 0) return;
  const params = { teams, target: targetId };
  await store.command(
    `INSERT INTO team_findings
     SELECT arrayJoin({teams:Array(String)}) AS team, ${FINDING_COLUMNS}
     FROM findings FINAL
     WHERE target_id = {target:UUID}`,
    params,
  );
  await store.command(
    `INSERT INTO team_finding_counts
     SELECT team, {target:UUID} AS target_id, ${COUNTERS.map((c) => `sum(${c}) AS ${c}`).join(', ')}
     FROM
     (
         SELECT arrayJoin({teams:Array(String)}) AS team, ${COUNTERS.join(', ')}
         FROM finding_counts WHERE target_id = {target:UUID}
         UNION ALL
         SELECT team, ${COUNTERS.map((c) => `-${c} AS ${c}`).join(', ')}
         FROM team_finding_counts WHERE team IN {teams:Array(String)} AND target_id = {target:UUID}
     )
     GROUP BY team
     HAVING ${COUNTERS.map((c) => `${c} != 0`).join(' OR ')}`,
    params,
  );
}

/**
 * Copies everything into every team of its target: for associations written in bulk straight into
 * target_teams, into empty copies, by a process that owns the store alone (the benchmark datasets).
 */
export async function copyAllToTeams(store: Store): Promise<void> {
  await store.command(
    `INSERT INTO team_findings
     SELECT t.team AS team, ${FINDING_COLUMNS}
     FROM findings FINAL
     INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t USING (target_id)`,
  );
  await store.command(
    `INSERT INTO team_finding_counts
     SELECT t.team AS team, target_id, ${COUNTERS.join(', ')}
     FROM finding_counts
     INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t USING (target_id)`,
  );
}
