import { z } from 'zod';
import { parseTimestamp } from '../domain/time.js';

/**
 * The parameters of an import (SPEC §13), shared by `POST /imports/{format}` (query) and
 * `vulndb import --format` (options): `target` overrides the document's target, `time` (RFC 3339)
 * is the report time of a document that carries none. Empty values count as absent (SPEC §5.5).
 */

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const emptyIsAbsent = (v: unknown) => (v === '' ? undefined : v);

export const importParamsSchema = z.object({
  target: z.preprocess(emptyIsAbsent, z.string().optional()).describe("Target identifier of the reports (default: the document's own)"),
  time: z
    .preprocess(
      emptyIsAbsent,
      z
        .string()
        .refine((v) => RFC3339.test(v) && parseTimestamp(v) !== undefined)
        .optional(),
    )
    .describe('Report time (RFC 3339) of a document that carries none (default: now)'),
});

export type ImportParams = z.infer<typeof importParamsSchema>;

/** The parameters, or which one is malformed (`time`; a repeated `target` is one too). */
export function parseImportParams(input: Record<string, unknown>): { params: ImportParams } | { malformed: string } {
  const parsed = importParamsSchema.safeParse({ target: input.target, time: input.time });
  if (parsed.success) return { params: parsed.data };
  return { malformed: String(parsed.error.issues[0]?.path[0] ?? 'parameter') };
}
