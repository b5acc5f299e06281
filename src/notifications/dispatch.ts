import type { Queue } from 'bullmq';
import { findingsByKeys } from '../findings/page.js';
import { renderFindings } from '../findings/render.js';
import { nowSeconds } from '../domain/time.js';
import type { Logger } from '../log.js';
import type { SlaPolicy } from '../sla/policy.js';
import { deliveryJobId, deliveryJobOptions, type DeliveryJob, type DispatchJob, dispatchJobSchema } from '../queue/contract.js';
import type { Store } from '../storage/gateway.js';
import { currentStatusEvent, type FindingStatus } from './batch-events.js';
import type { NotificationEvent } from './events.js';
import { listSubscriptions, wants } from './subscriptions.js';

/**
 * Expands a dispatch job into deliveries: one per event and subscription that wants it, the
 * team filter evaluated now, right after emission, on the target's current teams (SPEC §9.1).
 * Each delivery carries its body rendered once (the §6.1 finding object as GET /findings/{id}
 * renders it), so every attempt sends the same bytes, and a deterministic job id, so the same
 * event re-sent to the same subscription is dropped while the first is kept.
 */

export interface DeliveryTuning {
  attempts?: number;
  backoffMs?: number;
}

const CHUNK = 500;

const chunks = <T>(xs: T[], size = CHUNK): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
};

/** The current status of the findings the given families hold on the given targets. */
async function describedEvents(store: Store, pairs: { targetId: string; familyId: string }[]): Promise<NotificationEvent[]> {
  if (pairs.length === 0) return [];
  const wanted = new Set(pairs.map((p) => `${p.targetId}/${p.familyId}`));
  const rows = await store.query<FindingStatus & { family_ids: string[] }>(
    `SELECT id, target_id AS targetId, status, family_ids,
            CAST(found_at, 'Array(UInt32)') AS found, CAST(fixed_at, 'Array(UInt32)') AS fixed
     FROM findings FINAL
     WHERE target_id IN {targets:Array(UUID)} AND hasAny(family_ids, {families:Array(UUID)})`,
    { targets: [...new Set(pairs.map((p) => p.targetId))], families: [...new Set(pairs.map((p) => p.familyId))] },
  );
  return rows.filter((r) => r.family_ids.some((f) => wanted.has(`${r.targetId}/${f}`))).flatMap((r) => currentStatusEvent(r) ?? []);
}

export async function dispatch(
  deps: { store: Store; queue: Queue; log: Logger; slaPolicy?: SlaPolicy | undefined; delivery?: DeliveryTuning },
  data: unknown,
): Promise<{ events: number; deliveries: number }> {
  const job: DispatchJob = dispatchJobSchema.parse(data);
  // Without subscriptions nothing is delivered: a recovering batch's re-description (a scan of its
  // targets' findings) is skipped too.
  const subscriptions = await listSubscriptions(deps.store);
  if (subscriptions.length === 0) return { events: job.events.length, deliveries: 0 };
  const byId = new Map<string, NotificationEvent>();
  for (const e of [...job.events, ...(await describedEvents(deps.store, job.describe ?? []))]) if (!byId.has(e.id)) byId.set(e.id, e);
  const events = [...byId.values()];
  if (events.length === 0) return { events: 0, deliveries: 0 };

  const now = nowSeconds();
  let deliveries = 0;
  for (const part of chunks(events)) {
    const keys = [...new Map(part.map((e) => [e.findingId, { id: e.findingId, target_id: e.targetId }])).values()];
    // With the decision active now and sla_due: the finding object of GET /findings/{id} (SPEC §6.1).
    const rows = new Map((await findingsByKeys(deps.store, keys, { t: now })).map((r) => [r.id, r]));
    const jobs: { name: string; data: DeliveryJob; opts: ReturnType<typeof deliveryJobOptions> }[] = [];
    for (const event of part) {
      const row = rows.get(event.findingId);
      if (!row) {
        deps.log.warn('notification for an unknown finding dropped', { event: event.id, finding: event.findingId });
        continue;
      }
      const targets = subscriptions.filter((s) => wants(s, event.type, row.teams));
      if (targets.length === 0) continue;
      const [finding] = renderFindings([row], { t: now, atDate: false, slaPolicy: deps.slaPolicy });
      const body = JSON.stringify({
        id: event.id,
        type: event.type,
        time: event.time,
        finding,
        ...(event.decision ? { decision: event.decision } : {}),
      });
      for (const s of targets) {
        jobs.push({
          name: 'deliver',
          data: { webhookId: s.id, eventId: event.id, type: event.type, body },
          opts: { ...deliveryJobOptions(deps.delivery?.attempts, deps.delivery?.backoffMs), jobId: deliveryJobId(event.id, s.id) },
        });
      }
    }
    if (jobs.length > 0) await deps.queue.addBulk(jobs);
    deliveries += jobs.length;
  }
  return { events: events.length, deliveries };
}
