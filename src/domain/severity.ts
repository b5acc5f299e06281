/** Severity bands of SPEC §2.7, used by every statistic and metric. */

export const SEVERITIES = ['critical', 'high', 'medium', 'low', 'informational'] as const;
export type Severity = (typeof SEVERITIES)[number];

export function severityOf(score: number): Severity {
  if (score === 0) return 'informational';
  if (score < 4) return 'low';
  if (score < 7) return 'medium';
  if (score < 9) return 'high';
  return 'critical';
}

export type BySeverity<T> = Record<Severity, T>;

export function zeroBySeverity(): BySeverity<number> {
  return { critical: 0, high: 0, medium: 0, low: 0, informational: 0 };
}
