import { expect } from 'vitest';
import type { z } from 'zod';
import { formatInstant } from '../../src/domain/time.js';
import { errorBodySchema } from '../../src/http/schema.js';
import { json, type TestService } from './service.js';

/**
 * Helpers of the database API tests: reads validated by the response schemas, error bodies, and
 * ingestion through the real queue (POST /checks, then wait for the worker).
 */

/** GET `path`, check the status and the JSON against `schema`; returns the parsed body. */
export async function get<S extends z.ZodType>(svc: TestService, path: string, schema: S, status = 200): Promise<z.output<S>> {
  const res = await svc.db(path);
  expect(res.headers.get('content-type')).toMatch(/^application\/json; charset=utf-8$/i);
  const body: unknown = await json(res, status);
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new Error(`${path}: response does not match its schema: ${parsed.error.message}\n${JSON.stringify(body)}`);
  return parsed.data;
}

/** The status and error body of a request that must fail. */
export async function failure(svc: TestService, path: string, init?: RequestInit): Promise<{ status: number; body: { message: string } }> {
  const res = await svc.db(path, init);
  expect(res.headers.get('content-type')).toMatch(/^application\/json; charset=utf-8$/i);
  const text = await res.text();
  const body = errorBodySchema.parse(JSON.parse(text));
  return { status: res.status, body };
}

/** Posts the reports to POST /checks, then waits until the worker processed all of them. */
export async function ingest(svc: TestService, reports: Record<string, unknown>[]): Promise<void> {
  for (const r of reports) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
}

/** Posts the reports one at a time, each processed before the next is sent (a fixed arrival order). */
export async function ingestInOrder(svc: TestService, reports: Record<string, unknown>[]): Promise<void> {
  for (const r of reports) await ingest(svc, [r]);
}

/** Epoch seconds of an RFC 3339 instant. */
export const epoch = (iso: string) => Date.parse(iso) / 1000;

/** The report time `hours` before the instant `iso` (Vulcan report format). */
export const hoursBefore = (iso: string, hours: number) => reportTime(epoch(iso) - hours * 3600);

/** An epoch second as a Vulcan report timestamp (`YYYY-MM-DD HH:MM:SS`, UTC). */
export const reportTime = (seconds: number) => formatInstant(seconds).replace('T', ' ').replace('Z', '');

/** Sorts strings in byte order of their UTF-16 units, as SPEC §5.4 orders ids. */
export const byteOrder = (values: string[]) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
