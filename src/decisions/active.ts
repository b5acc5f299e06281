import { sqlAt } from '../filters/sql.js';

/**
 * "Active at T" and "suppressed at T" (SPEC §12.3) in SQL, written once for the decision routes,
 * the findings lists and every statistic. A decision is active at T iff it was made by T, is not
 * revoked at or before T, has not expired (T < expires_at) and, for a false positive, no FOUND
 * event of its finding in (created_at, T] carries another fingerprint.
 *
 * created_at and revoked_at keep milliseconds; at T (whole seconds, SPEC §0.2) they count from
 * their whole second, so a decision made during the second of "now" is already active at now.
 * `activeAt` binds T twice: as a DateTime (`<name>`) and as the end of its second (`<name>End`).
 */

/** Milliseconds as a ClickHouse DateTime64(3, 'UTC') parameter. */
export const sqlMillis = (ms: number) => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');

/** The parameters of `activeDecisionsAt(name)` for the reference instant `t` (epoch seconds). */
export function activeAtParams(name: string, t: number): Record<string, string> {
  const at = sqlAt(t);
  // sqlAt clamps T into DateTime's span; the end of its second follows the clamped value.
  const end = Date.parse(`${at.replace(' ', 'T')}Z`) + 1000;
  return { [name]: at, [`${name}End`]: sqlMillis(end) };
}

/**
 * The decisions active at T: rows of finding_decisions (every column) that hold at T. `where`
 * narrows the decisions read (e.g. one finding's), before the activity rules.
 */
export function activeDecisionsAt(name: string, where = '1'): string {
  const t = `{${name}:DateTime('UTC')}`;
  const end = `{${name}End:DateTime64(3, 'UTC')}`;
  // The false positives whose finding was seen with another fingerprint after the decision: the
  // events are read by their sort key (finding_id), for the findings with such a decision only.
  const lapsed = `
      SELECT fp.id
      FROM (SELECT finding_id, time, fingerprint FROM finding_events
            WHERE finding_id IN (SELECT finding_id FROM finding_decisions WHERE decision = 'false_positive' AND ${where})
              AND time <= ${t}) AS e
      INNER JOIN (SELECT id, finding_id, created_at, fingerprint FROM finding_decisions
                  WHERE decision = 'false_positive' AND ${where}) AS fp ON e.finding_id = fp.finding_id
      WHERE e.time > toStartOfSecond(fp.created_at) AND e.fingerprint != fp.fingerprint
      SETTINGS join_algorithm = 'hash'`;
  return `
    SELECT *
    FROM finding_decisions
    WHERE ${where}
      AND created_at < ${end}
      AND (expires_at IS NULL OR ${t} < expires_at)
      AND id NOT IN (SELECT decision_id FROM decision_revocations WHERE revoked_at < ${end})
      AND (decision = 'accepted_risk' OR id NOT IN (${lapsed}))`;
}

/**
 * Rows of findings (or a team's copy: columns target_id, id) that are NOT suppressed at T. Read by
 * (target_id, id), the findings tables' sort key.
 */
export const notSuppressedAt = (name: string) => `(target_id, id) NOT IN (SELECT target_id, finding_id FROM (${activeDecisionsAt(name)}))`;

/** Rows of findings that ARE suppressed at T (to subtract them from materialized counters). */
export const suppressedAt = (name: string) => `(target_id, id) IN (SELECT target_id, finding_id FROM (${activeDecisionsAt(name)}))`;
