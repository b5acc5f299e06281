import { decisionObject } from '../decisions/schema.js';
import { z } from 'zod';
import { countSchema, entityIdSchema, instantSchema, paginationSchema, teamIdSchema } from '../http/schema.js';
import { issueSchema } from '../issues/schema.js';
import { sourceSchema } from '../sources/schema.js';
import { targetSchema } from '../targets/schema.js';

/** Response schemas of the finding endpoints (SPEC §6.1, §6.2, §6.8, §6.9). */

/** A resource group of a report, renamed as the original exposed it (SPEC §3.2). */
const resourceGroupSchema = z
  .object({
    name: z.string().describe('Name of the group'),
    attributes: z.array(z.string()).describe('Column names (the report\'s "header")'),
    resources: z.array(z.record(z.string(), z.string())).describe('Rows, column name → value (the report\'s "rows")'),
  })
  .strict()
  .describe('A table of affected resources');

const findingStatusSchema = z.enum(['OPEN', 'FIXED']).describe('OPEN or FIXED');

const findingSchema = z
  .object({
    id: entityIdSchema.describe('Finding id'),
    affected_resource: z
      .string()
      .describe('Human-readable affected resource, else the affected resource identity (the target identifier by default)'),
    details: z.string().describe('Details of the latest detection ("" when none)'),
    impact_details: z.string().describe('Impact details of the latest detection ("" when none)'),
    status: findingStatusSchema.describe('Status at the reference instant (now, or the start of atDate)'),
    score: z.number().min(0).max(10).describe('Score of the latest detection (CVSS-like, 0–10)'),
    total_exposure: countSchema.describe('Whole hours OPEN, over every period, up to the reference instant'),
    current_exposure: countSchema.optional().describe('Whole hours since the current OPEN period started; present only when OPEN'),
    sla_due: z
      .string()
      .nullable()
      .describe(
        'RFC 3339: remediation deadline of the period OPEN at the reference instant; null when not OPEN then or no SLA (SPEC §12.1)',
      ),
    decision: decisionObject.nullable().describe('The triage decision active at the reference instant, or null (SPEC §12.3)'),
    resources: z.array(resourceGroupSchema).describe('Resources of the latest detection'),
    issue: issueSchema,
    target: targetSchema,
    teams: z.array(teamIdSchema).describe('A copy of target.teams'),
    source: sourceSchema.describe('The source of the latest detection'),
  })
  .strict()
  .describe('The relation of one issue to one target (and affected resource)');

/** GET /findings/{finding_id}, /issues/{i}/targets/{t}, /targets/{t}/issues/{i} and their resources forms. */
export const findingResponse = z.object({ finding: findingSchema }).strict().describe('One finding');

/** GET /findings and the findings sub-lists of issues, targets and sources. */
export const findingListResponse = z
  .object({
    pagination: paginationSchema,
    findings: z.array(findingSchema).describe('Findings by ascending id, or by score with sortBy'),
  })
  .strict()
  .describe('A page of findings');

const findingEventSchema = z
  .object({
    id: entityIdSchema.describe('Event id'),
    finding_id: entityIdSchema.describe('Finding detected'),
    source_id: entityIdSchema.describe('Source (report) that detected it'),
    score: z.number().min(0).max(10).describe('Score reported'),
    details: z.string().describe('Details reported ("" when none)'),
    resources: z.array(resourceGroupSchema).describe('Resources reported'),
    time: instantSchema.describe('Source time'),
  })
  .strict()
  .describe('One FOUND event: a report contained the finding');

/** GET /findings/{finding_id}/events. */
export const findingEventListResponse = z
  .object({
    pagination: paginationSchema,
    events: z.array(findingEventSchema).describe('Events by descending time, then ascending id'),
  })
  .strict()
  .describe('A page of FOUND events');

/** GET /findings|issues|targets|sources/{id}/mttr (SPEC §6.8). */
export const entityMttrResponse = z
  .object({
    mttr: z.number().min(0).describe('Mean time to remediate in days over closed OPEN periods, rounded to 2 decimals'),
  })
  .strict()
  .describe('Mean time to remediate of one entity');

export type FindingBody = z.infer<typeof findingSchema>;
export type FindingEventBody = z.infer<typeof findingEventSchema>;

/** GET /findings/{finding_id}/periods. */
export const findingPeriodsResponse = z
  .object({
    periods: z
      .array(
        z
          .object({
            found_at: instantSchema.describe('The period started: first detection, or a detection after a fix'),
            fixed_at: instantSchema.nullable().describe('The period ended (a later report of the family lacked it); null while OPEN'),
          })
          .strict(),
      )
      .describe('OPEN periods, oldest first (SPEC §2.6)'),
  })
  .strict()
  .describe("A finding's OPEN periods");
