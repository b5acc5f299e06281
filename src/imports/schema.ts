import { z } from 'zod';

/** The bodies of POST /imports/{format} (SPEC §13). */

export const importAccepted = z
  .object({
    job_ids: z.array(z.string()).describe('BullMQ job ids on the checks queue, one per report'),
    reports: z.number().int().min(1).describe('Reports the document became (one per SARIF run; one per Trivy document)'),
  })
  .strict()
  .describe("The document's reports are queued");

export const anyDocument = z.looseObject({}).meta({
  title: 'Scanner document',
  description: 'A SARIF 2.1.0 document (sarif) or a Trivy JSON document (trivy), as the scanner wrote it',
});
