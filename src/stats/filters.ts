import type { Scope, TimeFilter } from '../filters/sql.js';

/** The selection every statistic takes (SPEC §7): scope, labels, scores and dates where accepted. */
export interface StatFilters extends Scope, Omit<TimeFilter, 'status'> {
  labels?: string[] | undefined;
  minScore?: number | undefined;
  maxScore?: number | undefined;
}
