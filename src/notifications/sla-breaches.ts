import { SEVERITIES, type Severity } from '../domain/severity.js';
import type { Store } from '../storage/gateway.js';
import { slaBreachedEvent, type NotificationEvent } from './events.js';

/**
 * SLA breaches within a window (SPEC §12.1, §9.1): the OPEN findings whose current period's
 * deadline — its found_at plus the SLA of the finding's severity — fell in (from, to]. The
 * period's found_at makes the event id, so a window checked twice sends the same event.
 */

/** Days allowed per severity; null or absent: no SLA (the shape of config.slaPolicy). */
export type SlaDays = Partial<Record<Severity, number | null>>;

const DAY = 86_400;

export async function slaBreaches(
  store: Store,
  policy: SlaDays,
  window: { from: number; to: number },
  nowMs = Date.now(),
): Promise<NotificationEvent[]> {
  const limited = SEVERITIES.filter((s) => typeof policy[s] === 'number' && policy[s]! > 0);
  if (limited.length === 0 || window.to <= window.from) return [];
  // An OPEN finding's current period began at last_found_at; its deadline is that plus the
  // seconds of its severity, looked up by the enum's value (sql/0005: informational 0 … critical 4).
  const seconds = ['informational', 'low', 'medium', 'high', 'critical'].map((s) =>
    limited.includes(s as Severity) ? policy[s as Severity]! * DAY : 0,
  );
  const rows = await store.query<{ id: string; targetId: string; foundAt: number }>(
    `SELECT id, target_id AS targetId, toInt64(toUnixTimestamp(last_found_at)) AS foundAt
     FROM findings FINAL
     WHERE status = 'OPEN'
       AND (arrayElement({seconds:Array(Int64)}, toUInt8(severity) + 1) AS allowed) > 0
       AND toInt64(toUnixTimestamp(last_found_at)) + allowed BETWEEN {from:Int64} + 1 AND {to:Int64}`,
    { seconds, from: window.from, to: window.to },
  );
  return rows.map((r) => slaBreachedEvent({ id: r.id, targetId: r.targetId }, Number(r.foundAt), nowMs));
}
