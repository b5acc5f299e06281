import type { z } from 'zod';
import type { FieldName } from '../filters/params.js';

/**
 * One operation of an API, declared once: its router mounts the path and parses exactly `params`,
 * and the OpenAPI document (src/openapi) presents the same declaration.
 */
export interface Endpoint {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI form, e.g. /findings/{finding_id}; routePath gives the router's. */
  path: string;
  tag: string;
  summary: string;
  /** The query parameters the route parses (fields of src/filters/params.ts), in validation order. */
  params?: readonly FieldName[];
  body?: z.ZodType;
  /** Other accepted bodies (JSON Schema): the document offers `oneOf` the body and these. */
  otherBodies?: Record<string, unknown>[];
  /** Longer text than the summary (OpenAPI `description`). */
  description?: string;
  status?: number;
  response: z.ZodType;
  /** Error statuses besides 500. */
  errors: number[];
  /** Answered through the response cache (src/cache/response-cache.ts), which sets `X-Cache`. */
  cached?: boolean;
}

/** The router's form of an OpenAPI path: /findings/{finding_id} → /findings/:finding_id. */
export const routePath = (endpoint: Pick<Endpoint, 'path'>) => endpoint.path.replace(/\{([^}]+)\}/g, ':$1');

export const PAGE = ['page', 'size'] as const;

/** An endpoint that parses query parameters. */
export type EndpointWithParams = Endpoint & { params: readonly FieldName[] };

/** A paged list: 400 for a bad parameter, 404 for a page past the end. */
export const listEndpoint = (
  path: string,
  tag: string,
  summary: string,
  response: z.ZodType,
  params: readonly FieldName[] = PAGE,
): EndpointWithParams => ({
  method: 'get',
  path,
  tag,
  summary,
  params,
  response,
  errors: [400, 404],
});

/** One resource: 404 when unknown (or outside the caller's scope). */
export const oneEndpoint = (path: string, tag: string, summary: string, response: z.ZodType): Endpoint => ({
  method: 'get',
  path,
  tag,
  summary,
  response,
  errors: [404],
});
