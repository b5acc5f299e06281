import type { Severity } from './types.js';

export function severityOf(score: number): Severity {
  if (score >= 9) return 'critical';
  if (score >= 7) return 'high';
  if (score >= 4) return 'medium';
  if (score > 0) return 'low';
  return 'informational';
}

/** The score bounds of a severity as the findings filters take them (SPEC §2.7, §5.5). */
export const SCORE_BOUNDS: Record<Severity, { minScore?: string; maxScore?: string }> = {
  critical: { minScore: '9' },
  high: { minScore: '7', maxScore: '8.999999' },
  medium: { minScore: '4', maxScore: '6.999999' },
  low: { minScore: '0.000001', maxScore: '3.999999' },
  informational: { maxScore: '0' },
};

export const instant = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace('Z', ' UTC') : '—');
export const day = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10);
export const percent = (ratio: number | null | undefined) =>
  ratio === null || ratio === undefined ? '—' : `${Math.round(ratio * 1000) / 10}%`;
export const days = (hours: number) => `${Math.round((hours / 24) * 10) / 10} d`;
export const label = (s: string) => s.replace(/_/g, ' ');
