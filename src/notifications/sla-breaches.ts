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
  const rows = await store.query<{ id: string; targetId: string; foundAt: number }>(
    `SELECT id, target_id AS targetId, foundAt
     FROM
     (
         SELECT id, target_id, toInt64(toUnixTimestamp(arrayElement(found_at, -1))) AS foundAt,
                transform(toString(severity), {severities:Array(String)}, {allowed:Array(Int64)}, toInt64(0)) AS allowed
         FROM findings FINAL
         WHERE status = 'OPEN' AND has({severities:Array(String)}, toString(severity))
     )
     WHERE foundAt + allowed > {from:Int64} AND foundAt + allowed <= {to:Int64}`,
    { severities: limited, allowed: limited.map((s) => policy[s]! * DAY), from: window.from, to: window.to },
  );
  return rows.map((r) => slaBreachedEvent({ id: r.id, targetId: r.targetId }, Number(r.foundAt), nowMs));
}
