import { z } from 'zod';
import type { Endpoint } from '../http/endpoint.js';
import { finishedReportSchema } from '../queue/contract.js';

const accepted = z
  .object({ job_id: z.string().describe('BullMQ job id') })
  .strict()
  .describe('The report is queued');

/** POST /checks (SPEC §3.1), declared once for the router (routes.ts) and the OpenAPI document. */
export const CHECK_ENDPOINTS = {
  submit: {
    method: 'post',
    path: '/checks',
    tag: 'ingestion',
    summary: 'Queue a Vulcan check report (reports whose status is not FINISHED are accepted and ignored)',
    description:
      'SPEC §3.1/§3.3: the body is any JSON object with a string `status`. A FINISHED report is validated fully and queued as ' +
      'validated (400 with the reason otherwise; fields not listed are dropped); a report of any other status is answered 202 ' +
      'and ignored whatever else it holds.',
    body: finishedReportSchema.meta({
      title: 'FINISHED report',
      description: 'Validated fully (SPEC §3.3); fields not listed are ignored',
    }),
    otherBodies: [
      {
        title: 'Report of another status',
        description:
          'Any JSON object whose status is a string other than FINISHED (e.g. RUNNING, FAILED): answered 202 and ignored; no other field is read',
        type: 'object',
        properties: { status: { type: 'string', not: { const: 'FINISHED' } } },
        required: ['status'],
      },
    ],
    status: 202,
    response: accepted,
    errors: [400, 413, 415, 503],
  } satisfies Endpoint,
} as const;
