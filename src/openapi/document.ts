import { z } from 'zod';
import { CACHE_STATUSES } from '../cache/response-cache.js';
import { querySchema, type PageLimits } from '../filters/params.js';
import { errorBodySchema } from '../http/schema.js';
import { dbOperations, type Operation } from './operations.js';

/**
 * The OpenAPI 3.1 document of the database API, generated from the zod schemas the service uses:
 * query parameters from the validated fields (their input side: the strings a client sends),
 * bodies and responses from the response schemas (their output side), with the descriptions
 * the schemas carry.
 */

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', reused: 'inline' }) as Record<string, unknown>;
  return rest;
}

const pathParams = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);

function parameters(op: Operation, limits: PageLimits) {
  const out: Record<string, unknown>[] = pathParams(op.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: name === 'resource' ? 'Affected resource, URL-encoded' : 'Identifier (a value that is not a UUID is simply unknown)',
  }));
  if (op.params && op.params.length > 0) {
    const props = (jsonSchema(querySchema(op.params, limits), 'input').properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const name of op.params) {
      const schema = props[name] ?? { type: 'string' };
      out.push({ name, in: 'query', required: false, schema, ...(schema.description ? { description: schema.description } : {}) });
    }
  }
  return out;
}

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid parameters or body (SPEC §5.2 message)',
  401: 'Unauthorized: with DB_API_AUTH=jwt, a missing or refused bearer token (WWW-Authenticate: Bearer)',
  403: 'Forbidden: with DB_API_AUTH=jwt, a team filter naming a team the caller lacks, or a write without admin or the ingest scope',
  404: 'Not Found, or Page Not Found',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  422: 'identifier can not be void / team can not be void',
  503: 'Unavailable (store) or Queue Unavailable',
};

/**
 * SPEC §5.1: tokens are optional (DB_API_AUTH=jwt turns them on), so every operation but the health
 * check accepts either no authentication or a bearer token.
 */
const BEARER = {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description:
    'Required only when the service runs with DB_API_AUTH=jwt: the metrics API tokens (HS256 with JWT_SECRET or RS256 with JWT_PUBLIC_KEY; ' +
    'claims sub, teams, admin, scopes). A caller that is not admin sees only the targets of its teams and what hangs off them ' +
    '(outside: empty lists, zero statistics, 404 for single resources); writes need admin or "scopes": ["ingest"].',
};
const OPEN_OPERATIONS = new Set(['/healthcheck']);

/** 401 wherever a token is asked for; 403 where a team filter or a write can be refused. */
function authErrors(op: Operation): number[] {
  if (OPEN_OPERATIONS.has(op.path)) return [];
  const refusable = op.method === 'post' || op.params?.some((p) => p === 'team' || p === 'teams');
  return refusable ? [401, 403] : [401];
}

const X_CACHE = {
  'X-Cache': {
    description:
      'HIT: answered from the Redis response cache; MISS: computed and stored; BYPASS: computed without the cache (Redis unavailable). ' +
      'An entry is never older than the last committed batch or team association, and at most 60 s old.',
    schema: { type: 'string', enum: [...CACHE_STATUSES] },
  },
};

export function openApiDocument(limits: PageLimits, version = '0.1.0') {
  const paths: Record<string, Record<string, unknown>> = {};
  const error = { description: '', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  for (const op of dbOperations) {
    const responses: Record<string, unknown> = {
      [String(op.status ?? 200)]: {
        description: op.response.description ?? 'OK',
        ...(op.cached ? { headers: X_CACHE } : {}),
        content: { 'application/json': { schema: jsonSchema(op.response, 'output') } },
      },
    };
    for (const status of [...op.errors, ...authErrors(op), 500]) responses[String(status)] = { ...error, description: ERROR_TEXT[status] ?? 'Internal Server Error' };
    (paths[op.path] ??= {})[op.method] = {
      tags: [op.tag],
      summary: op.summary,
      operationId: `${op.method}${op.path.replace(/\{([^}]+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
      parameters: parameters(op, limits),
      ...(OPEN_OPERATIONS.has(op.path) ? { security: [] } : {}),
      ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(op.body, 'input') } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'vulndb database API',
      version,
      description:
        'Findings, issues, targets, sources, FOUND events and statistics of the vulnerability tracking service. ' +
        'Instants are RFC 3339 UTC; exposures and MTTR statistics are in hours, per-entity MTTR in days. ' +
        'Open by default; with DB_API_AUTH=jwt every operation but /healthcheck takes a bearer token (see the bearer security scheme).',
    },
    // No authentication, or a bearer token (DB_API_AUTH=jwt).
    security: [{}, { bearer: [] }],
    paths,
    components: { schemas: { Error: jsonSchema(errorBodySchema, 'output') }, securitySchemes: { bearer: BEARER } },
  };
}

