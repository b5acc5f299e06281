import { randomUUID } from 'node:crypto';
import { formatInstant, fromStoreDateTime } from '../domain/time.js';
import { sqlAt } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { activeAtParams, activeDecisionsAt, sqlMillis } from './active.js';

/**
 * The statements of triage decisions (SPEC §12.3). Both tables are append-only (sql/0016): making
 * a decision inserts it, carrying the ids of the decisions it replaces (sql/0018), revoking one
 * inserts a revocation; nothing is updated or deleted. Writes on one finding run under its lock
 * (src/decisions/routes.ts), so what they read of the finding's decisions is still true when they insert.
 */

export type DecisionKind = 'false_positive' | 'accepted_risk';

/** The decision object of SPEC §12.3. */
export interface Decision {
  id: string;
  finding_id: string;
  decision: DecisionKind;
  reason: string;
  by: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  fingerprint: string;
}

export interface DecisionInput {
  decision: DecisionKind;
  reason: string;
  /** Epoch seconds, or null. */
  expiresAt: number | null;
}

/** What the routes need to know of a finding: its target (for authorization) and teams. */
export interface FindingOwner {
  targetId: string;
  teams: string[];
}

/**
 * The finding's target and its teams, or undefined for an unknown id: one statement either way, so
 * an unknown id and a finding outside the caller's teams cost the same (SPEC §12.3).
 */
export async function findingOwner(store: Store, findingId: string): Promise<FindingOwner | undefined> {
  // A finding's target never changes (its id is derived from it): any version tells it.
  const [row] = await store.query<{ found: number; target: string; teams: string[] }>(
    `WITH (SELECT groupArray(target_id) FROM (SELECT target_id FROM findings WHERE id = {finding:UUID} LIMIT 1)) AS owner
     SELECT notEmpty(owner) AS found, toString(owner[1]) AS target,
            arraySort(groupUniqArray(team)) AS teams
     FROM target_teams WHERE target_id IN owner`,
    { finding: findingId },
  );
  if (!row || !Number(row.found)) return undefined;
  return { targetId: row.target, teams: row.teams };
}

/**
 * The fingerprint of the finding's latest FOUND event by `atMs` (SPEC §3.5.6 order): what the
 * decision is about. Events dated after it (a scanner's clock ahead) count only when there is no other.
 */
async function fingerprintAt(store: Store, findingId: string, atMs: number): Promise<string> {
  const [row] = await store.query<{ fp: string }>(
    `SELECT argMax(fingerprint, (time <= {at:DateTime('UTC')}, time, check_id, pos)) AS fp
     FROM finding_events WHERE finding_id = {finding:UUID}`,
    { finding: findingId, at: sqlAt(Math.floor(atMs / 1000)) },
  );
  return row?.fp ?? '';
}

/** The ids of the finding's decisions active at `atMs` (normally at most one). */
export async function activeDecisionIds(store: Store, findingId: string, atMs: number): Promise<string[]> {
  const rows = await store.query<{ id_text: string }>(
    `SELECT toString(id) AS id_text FROM (${activeDecisionsAt('decAt', 'finding_id = {decFinding:UUID}')})`,
    { ...activeAtParams('decAt', Math.floor(atMs / 1000)), decFinding: findingId },
  );
  return rows.map((r) => r.id_text);
}

/** Revokes decisions at `atMs` by `by` (one row each). */
export async function revokeDecisions(store: Store, findingId: string, ids: string[], by: string, atMs: number): Promise<void> {
  if (ids.length === 0) return;
  await store.insert(
    'finding_decision_revocations',
    ids.map((id) => ({ decision_id: id, finding_id: findingId, revoked_at: sqlMillis(atMs), revoked_by: by })),
  );
}

/**
 * When a write on the finding takes effect: now, or just after the latest instant of its trail when
 * that is not before now (another process's clock may run behind). Writes serialized by the
 * finding's lock thus stay ordered in the trail as they were made, and each sees the one before active.
 */
export async function writeInstant(store: Store, findingId: string, nowMs: number): Promise<number> {
  const [row] = await store.query<{ latest: string }>(
    `SELECT toString(toUnixTimestamp64Milli(greatest(
        (SELECT max(created_at) FROM finding_decisions WHERE finding_id = {finding:UUID}),
        (SELECT max(revoked_at) FROM finding_decision_revocations WHERE finding_id = {finding:UUID})))) AS latest`,
    { finding: findingId },
  );
  return Math.max(Math.floor(nowMs), Number(row?.latest ?? 0) + 1);
}

/**
 * Makes a decision on a finding at `atMs`, revoking the active one(s) at the same instant by the
 * same caller (SPEC §12.3: a replacement). The revocations are columns of the decision's row: one
 * insert stores both or neither, so a failed PUT leaves the active decision as it was.
 */
export async function makeDecision(
  store: Store,
  finding: { id: string; targetId: string },
  input: DecisionInput,
  by: string,
  atMs: number,
): Promise<{ decision: Decision; replaced: string[] }> {
  const [replaced, fingerprint] = await Promise.all([activeDecisionIds(store, finding.id, atMs), fingerprintAt(store, finding.id, atMs)]);
  const row = {
    id: randomUUID(),
    finding_id: finding.id,
    target_id: finding.targetId,
    decision: input.decision,
    reason: input.reason,
    by,
    created_at: sqlMillis(atMs),
    expires_at: input.expiresAt,
    fingerprint,
    replaces: replaced,
  };
  await store.insert('finding_decisions', [row]);
  const decision: Decision = {
    id: row.id,
    finding_id: finding.id,
    decision: input.decision,
    reason: input.reason,
    by,
    created_at: formatInstant(Math.floor(atMs / 1000)),
    expires_at: input.expiresAt === null ? null : formatInstant(input.expiresAt),
    revoked_at: null,
    revoked_by: null,
    fingerprint,
  };
  return { decision, replaced };
}

interface DecisionRow {
  id: string;
  finding: string;
  decision: DecisionKind;
  reason: string;
  by_sub: string;
  created: string;
  expires: string | null;
  revoked: string | null;
  revoked_by_sub: string | null;
  fingerprint: string;
}

const seconds = (text: string) => formatInstant(Math.floor(fromStoreDateTime(text.slice(0, 19))));

/**
 * Decisions with their revocation, oldest first: `decisions` is a subquery of finding_decisions
 * rows, `findings` a condition on finding_id that narrows the revocations read.
 */
function withRevocations(decisions: string, findings: string): string {
  return `
    SELECT toString(d.id) AS id, toString(d.finding_id) AS finding, toString(d.decision) AS decision, d.reason AS reason,
           d.by AS by_sub, toString(d.created_at) AS created, toString(d.expires_at) AS expires,
           if(r.decision_id = d.id, toString(r.first_revoked), NULL) AS revoked,
           if(r.decision_id = d.id, r.first_by, NULL) AS revoked_by_sub, d.fingerprint AS fingerprint
    FROM (${decisions}) AS d
    LEFT JOIN (SELECT decision_id, min(revoked_at) AS first_revoked, argMin(revoked_by, revoked_at) AS first_by
               FROM decision_revocations WHERE ${findings} GROUP BY decision_id) AS r
      ON r.decision_id = d.id
    ORDER BY d.created_at, d.id`;
}

const toDecision = (r: DecisionRow): Decision => ({
  id: r.id,
  finding_id: r.finding,
  decision: r.decision,
  reason: r.reason,
  by: r.by_sub,
  created_at: seconds(r.created),
  expires_at: r.expires === null ? null : seconds(r.expires),
  revoked_at: r.revoked === null ? null : seconds(r.revoked),
  revoked_by: r.revoked_by_sub,
  fingerprint: r.fingerprint,
});

/** Every decision made on the finding, newest first, with its revocation (the audit trail). */
export async function decisionTrail(store: Store, findingId: string): Promise<Decision[]> {
  const one = 'finding_id = {finding:UUID}';
  const rows = await store.query<DecisionRow>(withRevocations(`SELECT * FROM finding_decisions WHERE ${one}`, one), { finding: findingId });
  return rows.map(toDecision).reverse();
}

/** The decision active at `t` of each of these findings (SPEC §12.3: a finding object's `decision`). */
export async function decisionsAt(store: Store, findingIds: readonly string[], t: number): Promise<Map<string, Decision>> {
  const out = new Map<string, Decision>();
  if (findingIds.length === 0) return out;
  const these = 'finding_id IN {findings:Array(UUID)}';
  const rows = await store.query<DecisionRow>(withRevocations(activeDecisionsAt('decAt', these), these), {
    ...activeAtParams('decAt', t),
    findings: findingIds,
  });
  // Oldest first: the latest decision of a finding is the one kept.
  for (const row of rows) out.set(row.finding, toDecision(row));
  return out;
}
