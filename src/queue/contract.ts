import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import { wellFormed, wellFormedJson } from '../domain/text.js';
import { parseTimestamp } from '../domain/time.js';

/**
 * The queue contract shared by every producer (POST /checks, `vulndb import`, the demo) and the
 * ingest worker: the queue name, the options jobs are added with, and the schema of a job's
 * data, which is a Vulcan check report (SPEC §3.2) validated by the rules of SPEC §3.3.
 * The worker re-validates every job: scanners may add jobs to the queue directly.
 */

export const CHECKS_QUEUE = 'checks';

/**
 * Bulk producers (`vulndb import`) add bundles of reports to a queue of their own: a job costs
 * the worker, Redis and the producer CPU whatever it carries, a sizeable share of what applying
 * its report costs, so a backfill moves hundreds of reports per job. A bundle is applied report by
 * report exactly as the same reports on `checks` would be; its own queue lets the worker bound
 * the reports it holds (jobs in flight × bundle size) apart from single-report jobs.
 */
export const CHECK_BUNDLES_QUEUE = 'checks-bulk';
/** Reports per bundle `vulndb import` sends, and the most a bundle may carry. */
export const BUNDLE_SIZE = 250;
export const BUNDLE_MAX_REPORTS = 1000;

/**
 * Retries are the worker's business (it retries transient failures itself, whatever options a
 * scanner used), so jobs only say how long to keep finished ones around for inspection: failed
 * ones, with their reason, for 7 days within the latest 100,000 (SPEC §3.7; `vulndb jobs failed`).
 */
export const checkJobOptions: JobsOptions = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
};

// SPEC §3.3 rule 2: for every optional field, null means absent.
const optionalString = z.string({ error: 'must be a string' }).nullish();
const requiredString = z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must be a non-empty string' });
const stringList = z.array(z.string({ error: 'must be a string' }), { error: 'must be an array of strings' }).nullish();
const timestamp = optionalString.refine((v) => v == null || v === '' || parseTimestamp(v) !== undefined, {
  error: 'must be a timestamp such as "2024-01-05 10:00:00" or "2024-01-05T10:00:00Z"',
});

/** Vulcan checks emit Name/Header/Rows; key names are matched case-insensitively. */
function lowerCaseKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const lower = k.toLowerCase();
    if (!(lower in out)) out[lower] = v;
  }
  return out;
}

const resourceGroupSchema = z.preprocess(
  lowerCaseKeys,
  z.object(
    {
      name: optionalString,
      header: stringList,
      rows: z
        .array(z.record(z.string(), z.string({ error: 'must be a string' }), { error: 'must be an object of strings' }), {
          error: 'must be an array of objects',
        })
        .nullish(),
    },
    { error: 'must be an object' },
  ),
);

export const vulnerabilitySchema = z.object(
  {
    summary: requiredString,
    description: optionalString,
    score: z
      .number({ error: 'must be a number in [0, 10]' })
      .min(0, { error: 'must be a number in [0, 10]' })
      .max(10, { error: 'must be a number in [0, 10]' })
      .nullish(),
    cwe_id: z
      .number({ error: 'must be an integer in [0, 2147483647]' })
      .int({ error: 'must be an integer in [0, 2147483647]' })
      .min(0, { error: 'must be an integer in [0, 2147483647]' })
      .max(2147483647, { error: 'must be an integer in [0, 2147483647]' })
      .nullish(),
    recommendations: stringList,
    references: stringList,
    labels: stringList,
    details: optionalString,
    impact_details: optionalString,
    affected_resource: optionalString,
    affected_resource_string: optionalString,
    fingerprint: optionalString,
    resources: z.array(resourceGroupSchema, { error: 'must be an array of resource groups' }).nullish(),
  },
  { error: 'must be an object' },
);

export const finishedReportSchema = z
  .object({
    status: z.literal('FINISHED'),
    check_id: requiredString,
    checktype_name: requiredString,
    target: requiredString,
    options: optionalString,
    tag: optionalString,
    checktype_version: optionalString,
    start_time: timestamp,
    end_time: timestamp,
    vulnerabilities: z.array(vulnerabilitySchema, { error: 'must be an array of vulnerabilities or null' }).nullish(),
  })
  .refine((r) => (r.end_time ?? '') !== '' || (r.start_time ?? '') !== '', {
    error: 'end_time or start_time must be present',
    path: ['end_time'],
  });

export type FinishedReport = z.infer<typeof finishedReportSchema>;
export type ReportVulnerability = z.infer<typeof vulnerabilitySchema>;
export type ResourceGroupInput = z.infer<typeof resourceGroupSchema>;

export type ReportVerdict =
  | { kind: 'finished'; report: FinishedReport }
  | { kind: 'ignored'; status: string }
  | { kind: 'invalid'; reason: string };

function pathText(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out;
}

/**
 * A readable reason naming the offending fields, e.g. `vulnerabilities[2].score: must be …`; `within`
 * is the path of the value parsed when it is part of a larger one.
 */
export function describeIssues(error: z.ZodError, max = 5, within: readonly PropertyKey[] = []): string {
  const parts = error.issues.slice(0, max).map((i) => {
    const where = pathText([...within, ...i.path]);
    return where ? `${where}: ${i.message}` : i.message;
  });
  const more = error.issues.length > max ? ` (and ${error.issues.length - max} more)` : '';
  return parts.join('; ') + more;
}

/**
 * A bundle job's data. Each report is checked by `checkReport`, and a bundle with an invalid
 * report is rejected whole (nothing of it applied), as an invalid report is: its producer
 * validated what it sent, so the bundle is not what it meant to send.
 */
export const bundleSchema = z.object(
  {
    reports: z
      .array(z.unknown(), { error: 'must be an array of reports' })
      .min(1, { error: 'must hold at least one report' })
      .max(BUNDLE_MAX_REPORTS, { error: `must hold at most ${BUNDLE_MAX_REPORTS} reports` }),
  },
  { error: 'a bundle must be a JSON object with a "reports" array' },
);

export type Bundle = z.infer<typeof bundleSchema>;

/** Cuts reports into bundles of `size` (the last one may be shorter). */
export function toBundles(reports: unknown[], size: number): Bundle[] {
  const bundles: Bundle[] = [];
  for (let i = 0; i < reports.length; i += size) bundles.push({ reports: reports.slice(i, i + size) });
  return bundles;
}

/** The bundle, or why the data is not one. */
export function checkBundle(data: unknown): { bundle: Bundle } | { reason: string } {
  const parsed = bundleSchema.safeParse(data);
  return parsed.success ? { bundle: parsed.data } : { reason: describeIssues(parsed.error) };
}

/**
 * What a producer enqueues for a report (SPEC §3.1): the report as validated, never the raw body.
 * A report that is not FINISHED is ignored by the worker whatever else it holds, so its job carries
 * its status alone (cut short: only "FINISHED" matters).
 */
export function jobDataOf(verdict: Exclude<ReportVerdict, { kind: 'invalid' }>): FinishedReport | { status: string } {
  return verdict.kind === 'finished' ? verdict.report : { status: wellFormed(verdict.status.slice(0, 64)) };
}

/**
 * SPEC §3.3: a non-object or a missing/non-string status is invalid; a status other than
 * FINISHED is valid and ignored without checking anything else; a FINISHED report must satisfy
 * every rule or it is rejected whole.
 */
export function checkReport(data: unknown): ReportVerdict {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { kind: 'invalid', reason: 'report must be a JSON object' };
  }
  const status = (data as Record<string, unknown>).status;
  if (typeof status !== 'string') return { kind: 'invalid', reason: 'status: must be a string' };
  if (status !== 'FINISHED') return { kind: 'ignored', status };
  const parsed = finishedReportSchema.safeParse(data);
  if (!parsed.success) return { kind: 'invalid', reason: describeIssues(parsed.error) };
  // The fields of §3.2 only (zod drops the rest), with any text made storable (§3.3 item 6).
  return { kind: 'finished', report: wellFormedJson(parsed.data) };
}

/**
 * Webhook notifications (SPEC §9.1) have a queue of their own, so that deliveries never wait in
 * line with reports nor reports with deliveries. Two kinds of job: `dispatch` (what one committed
 * batch, a periodic check or a decision emitted; expanded into one delivery per matching
 * subscription) and `deliver` (one event to one subscription).
 */
export const NOTIFICATIONS_QUEUE = 'notifications';

/** Every queue of the service: the ones `vulndb jobs --queue` accepts. */
export const QUEUES: readonly string[] = [CHECKS_QUEUE, CHECK_BUNDLES_QUEUE, NOTIFICATIONS_QUEUE];

/** The notification events (SPEC §9.1) a subscription may ask for; src/notifications/events.ts makes them. */
export const EVENT_TYPES = ['finding.opened', 'finding.reopened', 'finding.fixed', 'finding.sla_breached', 'finding.decision'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What happened to a decision (SPEC §12.3): a `finding.decision` event says which. */
export const DECISION_ACTIONS = ['made', 'revoked', 'expired'] as const;
export type DecisionAction = (typeof DECISION_ACTIONS)[number];

const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/);

export const notificationEventSchema = z.object({
  id: uuid,
  type: z.enum(EVENT_TYPES),
  time: z.string(),
  findingId: uuid,
  targetId: uuid,
  decision: z.looseObject({ id: z.string(), action: z.enum(DECISION_ACTIONS) }).optional(),
});

/**
 * A dispatch job: events ready to send, and (a batch retried after a crash) the (target, family)
 * pairs whose findings' current state is to be described again, since the retry itself sees no
 * change (same event ids; receivers deduplicate).
 */
export const dispatchJobSchema = z.object({
  events: z.array(notificationEventSchema),
  describe: z.array(z.object({ targetId: uuid, familyId: uuid })).default([]),
});
export type DispatchJob = z.input<typeof dispatchJobSchema>;

/** A delivery job: the body is rendered once, so every attempt sends (and signs) the same bytes. */
export const deliveryJobSchema = z.object({
  webhookId: uuid,
  eventId: uuid,
  type: z.enum(EVENT_TYPES),
  body: z.string(),
});
export type DeliveryJob = z.infer<typeof deliveryJobSchema>;

/**
 * Failed jobs of the notifications queue are kept with their reason at most 7 days and the latest
 * 10,000 (SPEC §9.1 bounds: Redis memory stays bounded whatever receivers or the store do).
 */
export const FAILED_NOTIFICATIONS_KEPT = { age: 7 * 24 * 3600, count: 10_000 };

/** Dispatching reads the store: retried briefly on failure; failed ones kept for `vulndb jobs`. */
export const dispatchJobOptions: JobsOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: FAILED_NOTIFICATIONS_KEPT,
};

/**
 * Deliveries retry with exponential backoff: attempt n waits base × 2^(n-1) after the previous
 * one, so `attempts` tries span base × (2^(attempts-1) − 1) — 34 h for the defaults, beyond the
 * 24 h SPEC §9.1 asks. Failed ones are kept with their reason for `vulndb jobs failed --queue
 * notifications` and re-drive, within FAILED_NOTIFICATIONS_KEPT; completed ones a day, so that a
 * re-sent event (same job id) is dropped meanwhile instead of delivered twice.
 */
export const DELIVERY_ATTEMPTS = 13;
export const DELIVERY_BACKOFF_MS = 30_000;

export function deliveryJobOptions(attempts = DELIVERY_ATTEMPTS, backoffMs = DELIVERY_BACKOFF_MS): JobsOptions {
  return {
    attempts,
    backoff: { type: 'exponential', delay: backoffMs },
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: FAILED_NOTIFICATIONS_KEPT,
  };
}

/** A delivery's job id: one per event and subscription, so duplicates are dropped while it is kept. */
export const deliveryJobId = (eventId: string, webhookId: string) => `${eventId}_${webhookId}`;
