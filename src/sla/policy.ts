import { SEVERITIES, type BySeverity, type Severity } from '../domain/severity.js';

/**
 * The remediation SLA policy (SPEC §12.1): days allowed per severity, from `SLA_DAYS`
 * (`critical=7,high=30,…`). A severity the variable does not list has no SLA (null).
 */

export type SlaPolicy = BySeverity<number | null>;

export const DEFAULT_SLA_DAYS = 'critical=7,high=30,medium=90,low=180';

/** The `sla=` values of findings lists (SPEC §12.1). */
export const SLA_FILTERS = ['breached', 'within'] as const;
export type SlaFilter = (typeof SLA_FILTERS)[number];

/** A deadline past 100 years is no deadline a team works to; it also keeps found_at + days in range. */
const MAX_DAYS = 36_500;

const SECONDS_PER_DAY = 86_400;

/**
 * Parses `SLA_DAYS`: comma-separated `severity=days` entries, each severity at most once, days a
 * whole number from 1 to 36500. Throws an Error whose message says what is wrong with which entry.
 */
export function parseSlaDays(text: string): SlaPolicy {
  const policy: SlaPolicy = { critical: null, high: null, medium: null, low: null, informational: null };
  const seen = new Set<string>();
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const m = /^([A-Za-z_]+)\s*=\s*(\d+)$/.exec(entry);
    if (!m) throw new Error(`"${entry}" is not severity=days (e.g. ${DEFAULT_SLA_DAYS})`);
    const [, name, days] = m as unknown as [string, string, string];
    if (!(SEVERITIES as readonly string[]).includes(name)) throw new Error(`"${name}" is not a severity (${SEVERITIES.join(', ')})`);
    if (seen.has(name)) throw new Error(`${name} is given twice`);
    seen.add(name);
    const n = Number(days);
    if (n < 1 || n > MAX_DAYS) throw new Error(`${name}=${days}: days must be a whole number from 1 to ${MAX_DAYS}`);
    policy[name as Severity] = n;
  }
  if (seen.size === 0) throw new Error(`no severity=days entry (e.g. ${DEFAULT_SLA_DAYS})`);
  return policy;
}

export const DEFAULT_SLA_POLICY: SlaPolicy = parseSlaDays(DEFAULT_SLA_DAYS);

/** The policy as the response cache's variant (src/cache/response-cache.ts): answers depend on it. */
export const slaVariant = (policy: SlaPolicy | undefined) => `sla:${JSON.stringify(policy ?? DEFAULT_SLA_POLICY)}`;

/** Seconds allowed to a period of this severity, or undefined without an SLA. */
export function slaSeconds(policy: SlaPolicy, severity: Severity): number | undefined {
  const days = policy[severity];
  return days === null ? undefined : days * SECONDS_PER_DAY;
}

/**
 * SPEC §12.1 `sla_due`: the deadline (epoch seconds) of the period OPEN at t, or null when no
 * period is OPEN at t or the severity has no SLA. Periods are [found[i], fixed[i]), fixed = NEVER
 * while open; they never overlap, so at most one contains t.
 */
export function slaDueAt(periods: { found: number[]; fixed: number[] }, severity: Severity, t: number, policy: SlaPolicy): number | null {
  const allowed = slaSeconds(policy, severity);
  if (allowed === undefined) return null;
  const i = periods.found.findIndex((found, k) => found <= t && t < periods.fixed[k]!);
  return i < 0 ? null : periods.found[i]! + allowed;
}
