import { z } from 'zod';
import { countSchema, paginationSchema } from '../http/schema.js';
import { issueSchema } from '../issues/schema.js';

/** Response schemas of the statistics endpoints (SPEC §6.7, §6.9, §7). */

const bySeverity = <T extends z.ZodType>(value: T, what: string) =>
  ({
    critical: value.describe(`${what}, critical (score ≥ 9)`),
    high: value.describe(`${what}, high (7 ≤ score < 9)`),
    medium: value.describe(`${what}, medium (4 ≤ score < 7)`),
    low: value.describe(`${what}, low (0 < score < 4)`),
    informational: value.describe(`${what}, informational (score 0)`),
  }) as const;

/** SPEC §7.1/§7.2: findings by severity of their current score. */
export const severityCountsSchema = z.object(bySeverity(countSchema, 'Findings')).strict().describe('Findings counted by severity');

/** GET /stats/open. */
export const openStatsResponse = z
  .object({ open_issues: severityCountsSchema.describe('OPEN findings by severity (now, at atDate, or opened in the range)') })
  .strict()
  .describe('Open findings statistic');

/** GET /api/v1/stats/open/series (beyond SPEC §8.3): /stats/open at each of the atDates. */
export const openSeriesResponse = z
  .object({
    open_issues_series: z
      .array(
        z
          .object({
            date: z.string().describe('YYYY-MM-DD: one of atDates'),
            open_issues: severityCountsSchema.describe('OPEN findings by severity at the start of that day, as /stats/open?atDate answers'),
          })
          .strict(),
      )
      .describe('One point per date of atDates, ascending, each date once'),
  })
  .strict()
  .describe('Open findings statistic at several instants');

/** GET /stats/fixed. */
export const fixedStatsResponse = z
  .object({ fixed_issues: severityCountsSchema.describe('FIXED findings by severity (now, at atDate, or fixed in the range)') })
  .strict()
  .describe('Fixed findings statistic');

/** SPEC §7.3: an issue with its counted findings. */
export const issueStatSchema = issueSchema
  .extend({
    open: countSchema.describe('Counted findings of the issue currently OPEN'),
    fixed: countSchema.describe('Counted findings of the issue currently FIXED'),
  })
  .strict()
  .describe('An issue with counts of its findings');

/** GET /stats/issues. */
export const issueStatsResponse = z
  .object({
    pagination: paginationSchema,
    issues: z.array(issueStatSchema).describe('Issues with at least one counted finding, ascending id'),
  })
  .strict()
  .describe('A page of issue statistics');

const hours = z.number().min(0);

/** SPEC §7.4: mean TTR in hours. */
export const mttrStatsSchema = z
  .object({
    total: hours.describe('Mean time to remediate over every sample, hours, rounded to 2 decimals (0 without samples)'),
    ...bySeverity(hours, 'Mean time to remediate in hours'),
  })
  .strict()
  .describe('Mean time to remediate in hours, in total and by severity');

/** GET /stats/mttr. */
export const mttrStatsResponse = z.object({ mttr: mttrStatsSchema }).strict().describe('MTTR statistic');

/** SPEC §7.9. */
export const sizeStatsSchema = z
  .object({
    sources: countSchema.describe('Stored sources'),
    targets: countSchema.describe('Stored targets'),
    issues: countSchema.describe('Stored issues'),
    findings: countSchema.describe('Stored findings'),
    finding_events: countSchema.describe('Stored FOUND events'),
  })
  .strict()
  .describe('Numbers of stored entities');

/** GET /stats/size. */
export const sizeStatsResponse = z.object({ size: sizeStatsSchema }).strict().describe('Size statistic');

/** SPEC §7.7. */
export const assetStatsSchema = z
  .object({
    total: countSchema.describe('Targets in scope, with or without findings'),
    ...bySeverity(countSchema, 'Targets whose highest OPEN finding score has this severity'),
  })
  .strict()
  .describe('Vulnerable assets by severity');

/** GET /stats/assets. */
export const assetStatsResponse = z.object({ assets: assetStatsSchema }).strict().describe('Assets statistic');

const slaDays = z.number().int().min(1).nullable();
const ratio = z.number().min(0).max(1).nullable();
const withTotal = <T extends z.ZodType>(value: T, what: string, total: string) =>
  z
    .object({ ...bySeverity(value, what), total: value.describe(total) })
    .strict()
    .describe(what);

/** SPEC §12.2: remediation SLA at the reference instant and over the fixed periods. */
export const slaStatsSchema = z
  .object({
    policy_days: z.object(bySeverity(slaDays, 'Days allowed (null: no SLA)')).strict().describe('The policy (SLA_DAYS)'),
    open: withTotal(countSchema, 'Findings OPEN at the reference instant', 'Every severity'),
    breached: withTotal(countSchema, 'Findings OPEN and past their deadline at the reference instant (0 without SLA)', 'Every severity'),
    fixed: withTotal(countSchema, 'Closed periods fixed in the range (or before the reference instant)', 'Every severity'),
    fixed_within: withTotal(countSchema.nullable(), 'Of those, fixed by their deadline (null without SLA)', 'Severities with an SLA'),
    compliance: withTotal(ratio, 'fixed_within / fixed, 4 decimals (null without SLA or without fixes)', 'Severities with an SLA'),
  })
  .strict()
  .describe('Remediation SLA by severity');

/** GET /stats/sla. */
export const slaStatsResponse = z.object({ sla: slaStatsSchema }).strict().describe('SLA statistic');

/** SPEC §7.5/§7.6/§7.8: continuous percentiles with linear interpolation, and the mean. */
export const percentilesSchema = z
  .object({
    percentile_10: hours.describe('10th percentile, hours, rounded to 2 decimals'),
    percentile_25: hours.describe('25th percentile, hours, rounded to 2 decimals'),
    percentile_50: hours.describe('50th percentile, hours, rounded to 2 decimals'),
    percentile_75: hours.describe('75th percentile, hours, rounded to 2 decimals'),
    percentile_90: hours.describe('90th percentile, hours, rounded to 2 decimals'),
    mean: hours.describe('Arithmetic mean, hours, rounded to 2 decimals'),
  })
  .strict()
  .describe('Distribution of exposures in hours (all 0 without values)');

/** GET /stats/exposure. */
export const exposureStatsResponse = z
  .object({ exposure: percentilesSchema.describe('Total exposure of every finding in scope existing at the reference instant') })
  .strict()
  .describe('Total exposure statistic');

/** GET /stats/exposure/current. */
export const currentExposureStatsResponse = z
  .object({ current_exposure: percentilesSchema.describe('Current exposure of every finding in scope OPEN at the reference instant') })
  .strict()
  .describe('Current exposure statistic');

export type IssueStatBody = z.infer<typeof issueStatSchema>;
export type MttrStatsBody = z.infer<typeof mttrStatsSchema>;
export type AssetStatsBody = z.infer<typeof assetStatsSchema>;
export type PercentilesBody = z.infer<typeof percentilesSchema>;
