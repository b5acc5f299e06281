import { z } from 'zod';
import { entityIdSchema, instantSchema, paginationSchema } from '../http/schema.js';

/** Response schemas of the source endpoints (SPEC §2.3, §6.1, §6.3). */

export const sourceSchema = z
  .object({
    id: entityIdSchema.describe('Source id'),
    name: z.literal('vulcan').describe('Always "vulcan"'),
    component: z.string().describe('Check type name of the report'),
    instance: z.string().describe('Check id of the report'),
    options: z.string().describe('Options of the report, verbatim ("" when absent)'),
    time: instantSchema.describe('Report time: end_time, or start_time when end_time is absent'),
    target_id: entityIdSchema.describe('Target the check ran against'),
  })
  .strict()
  .describe('One ingested check execution (report)');

/** GET /sources/{source_id}. */
export const sourceResponse = z.object({ source: sourceSchema }).strict().describe('One source');

/** GET /sources. */
export const sourceListResponse = z
  .object({
    pagination: paginationSchema,
    sources: z.array(sourceSchema).describe('Sources by ascending time, then ascending id'),
  })
  .strict()
  .describe('A page of sources');

export type SourceBody = z.infer<typeof sourceSchema>;
