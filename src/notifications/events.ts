import { uuidv5 } from '../domain/ids.js';
import type { DecisionAction, EventType } from '../queue/contract.js';

/**
 * Notification events (SPEC §9.1). An event's id derives from the change it describes, never from
 * when or how often it is emitted: a retried batch, a recovery that re-describes the current state
 * or a periodic check that runs twice over an instant all produce the same id, and receivers
 * deduplicate on it (at least once).
 */

/**
 * A decision as the metrics API renders it (SPEC §12.3), carried as is in the delivery body;
 * `id` and `action` make the event's id.
 */
export interface DecisionPayload {
  id: string;
  action: DecisionAction;
  [field: string]: unknown;
}

export interface NotificationEvent {
  id: string;
  type: EventType;
  /** Emission instant, RFC 3339 (the body's `time`). */
  time: string;
  findingId: string;
  /** The finding's target: locates the finding and its teams (the subscriptions' filter). */
  targetId: string;
  /** `finding.decision` only. */
  decision?: DecisionPayload;
}

const eventId = (...parts: string[]) => uuidv5(JSON.stringify(['notification', ...parts]));

const rfc3339 = (epochMs: number) => new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/**
 * A status event: `boundary` is the instant of the period boundary the change is about (the
 * found_at of the period that opened, the fixed_at of the one that closed), so the same change has
 * the same id whichever batch or retry reports it.
 */
export function statusEvent(
  type: 'finding.opened' | 'finding.reopened' | 'finding.fixed',
  finding: { id: string; targetId: string },
  boundary: number,
  nowMs = Date.now(),
): NotificationEvent {
  return {
    id: eventId(finding.id, type, String(boundary)),
    type,
    time: rfc3339(nowMs),
    findingId: finding.id,
    targetId: finding.targetId,
  };
}

/** An SLA breach of the period that opened at `foundAt` (SPEC §12.1). */
export function slaBreachedEvent(finding: { id: string; targetId: string }, foundAt: number, nowMs = Date.now()): NotificationEvent {
  return {
    id: eventId(finding.id, 'finding.sla_breached', String(foundAt)),
    type: 'finding.sla_breached',
    time: rfc3339(nowMs),
    findingId: finding.id,
    targetId: finding.targetId,
  };
}

/** A decision made, revoked or expired (SPEC §12.3): one event per decision and action. */
export function decisionEvent(finding: { id: string; targetId: string }, decision: DecisionPayload, nowMs = Date.now()): NotificationEvent {
  return {
    id: eventId(finding.id, 'finding.decision', decision.id, decision.action),
    type: 'finding.decision',
    time: rfc3339(nowMs),
    findingId: finding.id,
    targetId: finding.targetId,
    decision,
  };
}
