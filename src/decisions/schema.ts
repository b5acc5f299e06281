import { z } from 'zod';
import { safeText } from '../domain/text.js';
import { parseTimestamp } from '../domain/time.js';
import type { DecisionInput } from './store.js';

/**
 * The body of `PUT /api/v1/findings/{finding_id}/decision` (SPEC §12.3). `expires_at` is an RFC
 * 3339 instant (any fraction truncated, SPEC §0.2) in the future: required and at most 365 days
 * ahead for an accepted risk, optional for a false positive. Unknown fields are ignored.
 */

export const MAX_REASON_CHARACTERS = 2000;
export const MAX_ACCEPTED_RISK_DAYS = 365;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const instant = safeText()
  .refine((v) => RFC3339.test(v) && parseTimestamp(v) !== undefined, { error: 'expires_at must be an RFC 3339 instant' })
  .transform((v) => parseTimestamp(v)!);

export const decisionBody = z.object({
  decision: z.enum(['false_positive', 'accepted_risk'], { error: 'decision must be false_positive or accepted_risk' }),
  reason: safeText({ error: 'reason is required' }).refine((v) => {
    const characters = [...v].length;
    return characters >= 1 && characters <= MAX_REASON_CHARACTERS;
  }, `reason must have 1 to ${MAX_REASON_CHARACTERS} characters`),
  expires_at: instant.nullish(),
});

/** The validated decision, or the reason it is refused (the 422's message). */
export function parseDecision(body: unknown, now: number): { ok: true; input: DecisionInput } | { ok: false; message: string } {
  const parsed = decisionBody.safeParse(body);
  if (!parsed.success) return { ok: false, message: parsed.error.issues[0]?.message ?? 'Invalid body' };
  const { decision, reason, expires_at: expiresAt } = parsed.data;
  if (expiresAt == null) {
    if (decision === 'accepted_risk') return { ok: false, message: 'expires_at is required for accepted_risk' };
    return { ok: true, input: { decision, reason, expiresAt: null } };
  }
  if (expiresAt <= now) return { ok: false, message: 'expires_at must be in the future' };
  if (decision === 'accepted_risk' && expiresAt > now + MAX_ACCEPTED_RISK_DAYS * 86_400) {
    return { ok: false, message: `expires_at must be at most ${MAX_ACCEPTED_RISK_DAYS} days ahead` };
  }
  return { ok: true, input: { decision, reason, expiresAt } };
}

/** The decision object's schema (SPEC §12.3), for the OpenAPI document and tests. */
export const decisionObject = z.object({
  id: z.uuid(),
  finding_id: z.uuid(),
  decision: z.enum(['false_positive', 'accepted_risk']),
  reason: z.string(),
  by: z.string(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  revoked_by: z.string().nullable(),
  fingerprint: z.string(),
});
export const decisionResponse = z.object({ decision: decisionObject });
export const decisionsResponse = z.object({ decisions: z.array(decisionObject) });
