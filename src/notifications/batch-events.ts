import type { Queue } from 'bullmq';
import type { BatchResult } from '../ingest/batch.js';
import type { NormalizedReport } from '../ingest/normalize.js';
import { enqueueEvents } from './emit.js';
import { statusEvent, type NotificationEvent } from './events.js';

/**
 * Status events of a committed batch (SPEC §9.1): one per finding whose current status the batch
 * changed, none for a finding it left OPEN or FIXED. The event says what the current state is:
 * an OPEN finding with one period was opened, with more it was reopened (also when a late report
 * wrote the earlier periods), a FIXED one was fixed (also a finding first known as FIXED).
 */

export interface FindingStatus {
  id: string;
  targetId: string;
  status: 'OPEN' | 'FIXED';
  /** Period starts and ends, oldest first (an open period ends at NEVER). */
  found: number[];
  fixed: number[];
}

/** The event describing a finding's current status; the period boundary it is about makes its id. */
export function currentStatusEvent(f: FindingStatus, nowMs = Date.now()): NotificationEvent | undefined {
  const last = f.found.length - 1;
  if (last < 0) return undefined;
  const finding = { id: f.id, targetId: f.targetId };
  if (f.status === 'FIXED') return statusEvent('finding.fixed', finding, f.fixed[last]!, nowMs);
  return statusEvent(last === 0 ? 'finding.opened' : 'finding.reopened', finding, f.found[last]!, nowMs);
}

export function batchStatusEvents(result: BatchResult, nowMs = Date.now()): NotificationEvent[] {
  return result.statusChanged.flatMap(
    (r) => currentStatusEvent({ id: r.id, targetId: r.target_id, status: r.status, found: r.found_at, fixed: r.fixed_at }, nowMs) ?? [],
  );
}

/**
 * The batcher's `notify` hook: one dispatch job per committed batch. A batch in recovery mode may
 * retry one whose process died after its commit and before this ran: it sees no change, so the
 * dispatcher is also asked to describe again the current state of the findings its reports'
 * families hold on their targets (the same event ids as the first time; receivers deduplicate).
 */
export function batchNotifier(queue: Queue, timeoutMs = 2000) {
  return async (result: BatchResult, batch: { recovery: boolean; reports: NormalizedReport[] }): Promise<void> => {
    const describe = new Map<string, { targetId: string; familyId: string }>();
    if (batch.recovery) {
      for (const r of batch.reports) describe.set(`${r.targetId}/${r.familyId}`, { targetId: r.targetId, familyId: r.familyId });
    }
    const source = batch.reports
      .map((r) => `${r.targetId}/${r.instance}`)
      .sort()
      .join(',');
    await enqueueEvents(queue, batchStatusEvents(result), { describe: [...describe.values()], timeoutMs, source });
  };
}
