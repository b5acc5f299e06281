import { decisionTrail } from '../decisions/store.js';
import type { Store } from '../storage/gateway.js';
import { decisionEvent, type NotificationEvent } from './events.js';

/**
 * Decision expiries within a window (SPEC §12.3, §9.1): decisions whose `expires_at` fell in
 * (from, to] and that were not revoked before it. Each becomes a `finding.decision` event with
 * the decision as the audit trail shows it and the action `expired` (the decision and the action
 * make the id, so a window checked twice sends the same event).
 */
export async function decisionExpiries(
  store: Store,
  window: { from: number; to: number },
  nowMs = Date.now(),
): Promise<NotificationEvent[]> {
  if (window.to <= window.from) return [];
  const rows = await store.query<{ id: string; finding: string; target: string }>(
    `SELECT toString(d.id) AS id, toString(d.finding_id) AS finding, toString(d.target_id) AS target
     FROM
     (
         SELECT id, finding_id, target_id, expires_at FROM finding_decisions
         WHERE expires_at > toDateTime({from:Int64}, 'UTC') AND expires_at <= toDateTime({to:Int64}, 'UTC')
     ) AS d
     LEFT JOIN
     (
         SELECT decision_id, min(revoked_at) AS first_revoked FROM decision_revocations GROUP BY decision_id
     ) AS r ON r.decision_id = d.id
     WHERE r.decision_id != d.id OR r.first_revoked > d.expires_at`,
    { from: window.from, to: window.to },
  );
  const events: NotificationEvent[] = [];
  for (const row of rows) {
    const decision = (await decisionTrail(store, row.finding)).find((d) => d.id === row.id);
    if (!decision) continue;
    events.push(decisionEvent({ id: row.finding, targetId: row.target }, { ...decision, action: 'expired' }, nowMs));
  }
  return events;
}
