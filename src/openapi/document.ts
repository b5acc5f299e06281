import { z } from 'zod';
import { CACHE_STATUSES } from '../cache/response-cache.js';
import { querySchema, type PageLimits } from '../filters/params.js';
import { errorBodySchema } from '../http/schema.js';
import { IMPORT_FORMAT_NAMES } from '../imports/formats.js';
import type { Endpoint } from '../http/endpoint.js';
import { dbOperations, metricsOperations } from './operations.js';

/**
 * The OpenAPI 3.1 document of both APIs — the database API (DB_API_PORT, 8080 by default) and the
 * metrics API under /api/v1 (METRICS_API_PORT, 8081 by default) — generated from the zod schemas
 * the service uses: query parameters from the validated fields (their input side: the strings a
 * client sends), bodies and responses from the response schemas (their output side), with the
 * descriptions the schemas carry.
 */

/** SPEC §8.2: the body of every metrics API error. */
export const metricsErrorBodySchema = z
  .object({
    code: z.number().int().describe('The HTTP status'),
    error: z.string().describe('What went wrong, e.g. "Invalid query params", "ID is malformed" or "Missing bearer token"'),
    type: z.string().describe('Kind: Unauthorized, Forbidden, Record not found, Method Not Allowed, Validation, Unavailable or Internal'),
  })
  .strict()
  .describe('Error response of the metrics API');

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', reused: 'inline' }) as Record<string, unknown>;
  return rest;
}

const pathParams = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);

function parameters(op: Endpoint, limits: PageLimits, api: Api) {
  const out: Record<string, unknown>[] = pathParams(op.path).map((name) => ({ name, in: 'path', required: true, ...api.pathParam(name) }));
  if (op.params && op.params.length > 0) {
    const props = (jsonSchema(querySchema(op.params, limits), 'input').properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const name of op.params) {
      const schema = props[name] ?? { type: 'string' };
      const description = api.paramDescription[name] ?? schema.description;
      out.push({ name, in: 'query', required: false, schema, ...(description ? { description } : {}) });
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

const METRICS_ERROR_TEXT: Record<number, string> = {
  401:
    'Unauthorized: the bearer token is missing, not Bearer, malformed, badly signed, expired, not yet valid, ' +
    'lacks sub or has a teams/admin claim of the wrong type (WWW-Authenticate: Bearer)',
  403:
    'Forbidden: team endpoints, the caller is not admin and team_id is not one of its teams; global endpoints, ' +
    'without teams the caller is not admin, with teams some listed team is not one of its teams',
  422:
    'Validation: "ID is malformed" (team_id is not a UUID) or "Invalid query params" (a malformed date, score or teams entry, ' +
    'atDate with minDate/maxDate, minDate after maxDate, atDate on MTTR)',
  503: 'Unavailable: the store does not answer, or a statement ran past QUERY_TIMEOUT_MS (Query Timeout)',
  500: 'Internal: unexpected failure',
};

/**
 * SPEC §5.1: on the database API tokens are optional (DB_API_AUTH=jwt turns them on), so every
 * operation but the health check accepts either no authentication or a bearer token. SPEC §8.1:
 * the metrics API requires the same tokens on every operation but its health check.
 */
const BEARER = {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description:
    "The tokens of SPEC §8.1: HS256 with JWT_SECRET, RS256 with JWT_PUBLIC_KEY, or an identity provider's RS256/ES256 tokens (JWT_JWKS_URL); " +
    'claims sub, teams, admin (names as JWT_TEAMS_CLAIM and JWT_ADMIN_CLAIM map them; and scopes on the database API). ' +
    'Metrics API: required on every operation but /api/v1/healthcheck. ' +
    'Database API: required only when the service runs with DB_API_AUTH=jwt; a caller that is not admin sees only the targets of its teams ' +
    'and what hangs off them (outside: empty lists, zero statistics, 404 for single resources); writes need admin or "scopes": ["ingest"].',
};

/** How one API's operations are rendered: error bodies, authentication, path parameters. */
interface Api {
  errorSchema: string;
  errorText: Record<number, string>;
  /** Operation-level `security`, when it differs from the document's. */
  security(op: Endpoint): unknown[] | undefined;
  /** Error statuses that authentication and authorization add to an operation. */
  authErrors(op: Endpoint): number[];
  pathParam(name: string): Record<string, unknown>;
  paramDescription: Partial<Record<string, string>>;
}

const DB_OPEN: ReadonlySet<string> = new Set(['/healthcheck']);
const databaseApi: Api = {
  errorSchema: 'Error',
  errorText: ERROR_TEXT,
  security: (op) => (DB_OPEN.has(op.path) ? [] : undefined),
  /** 401 wherever a token is asked for; 403 where a team filter or a write can be refused. */
  authErrors(op) {
    if (DB_OPEN.has(op.path)) return [];
    const refusable = op.method === 'post' || op.params?.some((p) => p === 'team' || p === 'teams');
    return refusable ? [401, 403] : [401];
  },
  pathParam: (name) =>
    name === 'format'
      ? {
          schema: { type: 'string', enum: IMPORT_FORMAT_NAMES },
          description: 'Scanner format of the document (SPEC §13); another value is 404',
        }
      : {
          schema: { type: 'string' },
          description: name === 'resource' ? 'Affected resource, URL-encoded' : 'Identifier (a value that is not a UUID is simply unknown)',
        },
  paramDescription: {},
};

const metricsApi: Api = {
  errorSchema: 'MetricsError',
  errorText: METRICS_ERROR_TEXT,
  // The health check is open; every other operation needs a token (nothing else will do).
  security: (op) => (op.errors.includes(401) ? [{ bearer: [] }] : []),
  authErrors: () => [],
  pathParam: (name) =>
    name === 'team_id'
      ? { schema: { type: 'string', format: 'uuid' }, description: 'Team UUID (otherwise 422 "ID is malformed")' }
      : { schema: { type: 'string' }, description: 'Identifier (a value that is not a UUID is simply unknown: 404)' },
  paramDescription: {
    teams:
      'Comma-separated team UUIDs: the union of their targets, each finding counted once. Empty (or only empty entries) = absent: ' +
      'every finding, admin only. A caller that is not admin must belong to every listed team (403 otherwise)',
  },
};

const X_CACHE = {
  'X-Cache': {
    description:
      'HIT: answered from the Redis response cache; MISS: computed and stored; BYPASS: computed without the cache (Redis unavailable). ' +
      'An entry is never older than the last committed batch or team association, and at most 60 s old.',
    schema: { type: 'string', enum: [...CACHE_STATUSES] },
  },
};

const operationId = (op: Endpoint) =>
  `${op.method}${op.path.replace(/\{([^}]+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`;

function requestBody(op: Endpoint): Record<string, unknown> | undefined {
  if (!op.body) return undefined;
  const body = jsonSchema(op.body, 'input');
  const schema = op.otherBodies ? { oneOf: [body, ...op.otherBodies] } : body;
  return { required: true, content: { 'application/json': { schema } } };
}

function operation(op: Endpoint, limits: PageLimits, api: Api) {
  const error = (status: number) => ({
    description: api.errorText[status] ?? 'Internal Server Error',
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${api.errorSchema}` } } },
  });
  const responses: Record<string, unknown> = {
    // 204: no body.
    [String(op.status ?? 200)]:
      op.status === 204
        ? { description: op.response.description ?? 'No Content' }
        : {
            description: op.response.description ?? 'OK',
            ...(op.cached ? { headers: X_CACHE } : {}),
            content: { 'application/json': { schema: jsonSchema(op.response, 'output') } },
          },
  };
  for (const status of [...op.errors, ...api.authErrors(op), 500]) responses[String(status)] = error(status);
  const security = api.security(op);
  const body = requestBody(op);
  return {
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    operationId: operationId(op),
    parameters: parameters(op, limits, api),
    ...(security ? { security } : {}),
    ...(body ? { requestBody: body } : {}),
    responses,
  };
}

const ALLOW = { Allow: { description: "The path's methods (RFC 9110), e.g. GET, HEAD", schema: { type: 'string' } } };
const errorResponse = (schema: string, description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
});

/** OpenAPI Server Object: where one API listens (HOST and its port variable). */
const server = (description: string, port: string, portVariable: string) => ({
  url: 'http://{host}:{port}',
  description,
  variables: {
    host: { default: 'localhost', description: 'The host running the service (it listens on HOST, default 0.0.0.0)' },
    port: { default: port, description: portVariable },
  },
});
const DB_SERVER = server('Database API (DB_API_PORT, default 8080)', '8080', 'DB_API_PORT');
const METRICS_SERVER = server(
  'Metrics API (METRICS_API_PORT, default 8081; with DB_API_PORT equal to it, one port serves both APIs)',
  '8081',
  'METRICS_API_PORT',
);

export function openApiDocument(limits: PageLimits, version = '0.1.0') {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of dbOperations) (paths[op.path] ??= {})[op.method] = operation(op, limits, databaseApi);
  for (const op of metricsOperations) (paths[op.path] ??= { servers: [METRICS_SERVER] })[op.method] = operation(op, limits, metricsApi);
  const tags = [...new Set([...dbOperations, ...metricsOperations].map((op) => op.tag))].map((name) => ({
    name,
    description: name.startsWith('metrics')
      ? 'Metrics API (SPEC §8): port 8081 by default (METRICS_API_PORT), paths under /api/v1, bearer token required but on its healthcheck, errors {code, error, type}'
      : 'Database API (SPEC §5–§6): port 8080 by default (DB_API_PORT), errors {message}',
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'vulndb database and metrics APIs',
      version,
      description:
        'The two HTTP APIs of the vulnerability tracking service, each on a listener of its own. ' +
        'Database API (port 8080 by default, DB_API_PORT; the server that serves this document): findings, issues, targets, sources, ' +
        'FOUND events, statistics and report ingestion; errors are {"message"}; open by default, with DB_API_AUTH=jwt every operation ' +
        'but /healthcheck takes a bearer token. ' +
        'Metrics API (port 8081 by default, METRICS_API_PORT; paths under /api/v1, each with its own servers entry): the statistics per ' +
        'team and globally; every operation but /api/v1/healthcheck requires a bearer token (security scheme bearer); errors are ' +
        '{"code", "error", "type"}. ' +
        'On both, an unknown path is 404 and a known path with another method is 405 with an Allow header listing its methods ' +
        '(components.responses). Instants are RFC 3339 UTC; exposures and MTTR statistics are in hours, per-entity MTTR in days.',
    },
    servers: [DB_SERVER],
    // Database API: no authentication, or a bearer token (DB_API_AUTH=jwt). Metrics operations say their own.
    security: [{}, { bearer: [] }],
    tags,
    paths,
    components: {
      schemas: { Error: jsonSchema(errorBodySchema, 'output'), MetricsError: jsonSchema(metricsErrorBodySchema, 'output') },
      responses: {
        NotFound: errorResponse('Error', 'Database API: an unknown path (Not Found)'),
        MethodNotAllowed: errorResponse('Error', 'Database API: a known path with another method (Method Not Allowed)', ALLOW),
        MetricsNotFound: errorResponse('MetricsError', 'Metrics API: an unknown path, whatever the token (type "Record not found")'),
        MetricsMethodNotAllowed: errorResponse('MetricsError', 'Metrics API: a known path with another method, whatever the token', ALLOW),
      },
      securitySchemes: { bearer: BEARER },
    },
  };
}
