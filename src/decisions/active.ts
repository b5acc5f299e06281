import { sqlAt } from '../filters/sql.js';

/**
 * "Active at T" (SPEC §12.3) in SQL, written once for the decision routes, the findings lists and
 * every statistic. A decision is active at T iff it was made by T, is not revoked at or before T,
 * has not expired (T < expires_at) and, for a false positive, no FOUND event of its finding in
 * (created_at, T] carries another fingerprint.
 *
 * Stated as each decision's interval of whole seconds [since, until): active at T iff since ≤ T <
 * until. created_at and revoked_at keep milliseconds; at T (whole seconds, SPEC §0.2) they count
 * from their whole second, so a decision made during the second of "now" is already active at now.
 * `until` is the earliest of its expiry, its first revocation's second and its lapse (the first
 * later FOUND event with another fingerprint).
 */

/** Milliseconds as a ClickHouse DateTime64(3, 'UTC') parameter. */
export const sqlMillis = (ms: number) => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');

/** The parameter of `activeAt(name)` for the reference instant `t` (epoch seconds). */
export const activeAtParams = (name: string, t: number): Record<string, string> => ({ [name]: sqlAt(t) });

const NEVER_SQL = "toDateTime(4294967295, 'UTC')";

/**
 * Every decision's interval: columns id, finding_id, target_id, decision, since, until. `where`
 * narrows the decisions read (e.g. one finding's) before anything else, the events of their
 * findings included.
 */
export function decisionIntervals(where = '1'): string {
  const falsePositives = `SELECT id, finding_id, created_at, fingerprint FROM finding_decisions WHERE decision = 'false_positive' AND ${where}`;
  return `
    SELECT d.id AS id, d.finding_id AS finding_id, d.target_id AS target_id, d.decision AS decision,
           toDateTime(toStartOfSecond(d.created_at), 'UTC') AS since,
           least(ifNull(d.expires_at, ${NEVER_SQL}),
                 if(r.decision_id = d.id, r.revoked, ${NEVER_SQL}),
                 if(l.id = d.id, l.lapsed, ${NEVER_SQL})) AS until
    FROM (SELECT id, finding_id, target_id, decision, created_at, expires_at FROM finding_decisions WHERE ${where}) AS d
    LEFT JOIN (SELECT decision_id, toDateTime(toStartOfSecond(min(revoked_at)), 'UTC') AS revoked
               FROM decision_revocations WHERE ${where} GROUP BY decision_id) AS r ON r.decision_id = d.id
    LEFT JOIN (SELECT fp.id AS id, min(e.time) AS lapsed
               -- The events are read by their sort key (finding_id), for the findings with a false positive only.
               FROM (SELECT finding_id, time, fingerprint FROM finding_events
                     WHERE finding_id IN (SELECT finding_id FROM (${falsePositives}))) AS e
               INNER JOIN (${falsePositives}) AS fp ON e.finding_id = fp.finding_id
               WHERE e.time > toStartOfSecond(fp.created_at) AND e.fingerprint != fp.fingerprint
               GROUP BY fp.id) AS l ON l.id = d.id
    SETTINGS join_algorithm = 'hash'`;
}

/** The condition "active at T" on the rows of decisionIntervals (or a copy of them), T bound as `name`. */
export const activeAt = (name: string) => `since <= {${name}:DateTime('UTC')} AND {${name}:DateTime('UTC')} < until`;

/**
 * The decisions active at T: rows of finding_decisions (every column) that hold at T. `where`
 * narrows the decisions read (e.g. one finding's), before the activity rules.
 */
export const activeDecisionsAt = (name: string, where = '1') =>
  `SELECT * FROM finding_decisions
   WHERE ${where} AND id IN (SELECT id FROM (${decisionIntervals(where)}) WHERE ${activeAt(name)})`;
