import type { SuppressionFilter } from '../filters/params.js';
import type { Scope, TimeFilter } from '../filters/sql.js';

/**
 * The selection every statistic takes (SPEC §7): scope, labels, scores and dates where accepted;
 * findings suppressed at the reference instant are left out unless includeSuppressed (§12.3).
 */
export interface StatFilters extends Scope, Omit<TimeFilter, 'status'>, SuppressionFilter {
  labels?: string[] | undefined;
  minScore?: number | undefined;
  maxScore?: number | undefined;
  /** The instants of a series (start of each `atDates` day, ascending): each point as `atDate` would select. */
  atDates?: number[] | undefined;
}
