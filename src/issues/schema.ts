import { z } from 'zod';
import { countSchema, entityIdSchema, paginationSchema } from '../http/schema.js';

/** Response schemas of the issue endpoints (SPEC §6.1, §6.4, §6.5). */

export const issueSchema = z
  .object({
    id: entityIdSchema.describe('Issue id'),
    summary: z.string().describe('Summary of the vulnerability (part of the issue identity)'),
    cwe_id: countSchema.describe('CWE identifier from the earliest detection (0 when none)'),
    description: z.string().describe('Description of the vulnerability (part of the issue identity)'),
    recommendations: z.array(z.string()).describe('Recommendations from the earliest detection'),
    reference_links: z.array(z.string()).describe('Reference links from the earliest detection'),
    labels: z
      .array(z.string())
      .describe('Labels of the latest detection with labels, sorted ascending, without duplicates or empty strings'),
  })
  .strict()
  .describe('A weakness, independent of where it is found');

/** GET /issues/{issue_id}. */
export const issueResponse = z.object({ issue: issueSchema }).strict().describe('One issue');

/** GET /issues, GET /targets/{target_id}/issues. */
export const issueListResponse = z
  .object({
    pagination: paginationSchema,
    issues: z.array(issueSchema).describe('Issues in ascending id order'),
  })
  .strict()
  .describe('A page of issues');

export type IssueBody = z.infer<typeof issueSchema>;
