import { createSecretKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Suppression } from '../src/decisions/suppression.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { createMetricsApi } from '../src/metrics/app.js';
import { tokenKeys } from '../src/auth/keys.js';
import { signJwt } from '../src/metrics/sign.js';
import { freshStore } from './support/engine.js';
import { startTestService, type TestService } from './support/service.js';

/** SPEC §8.1/§8.2: authentication, authorization, error bodies and their evaluation order. */

const SECRET = 'metrics-auth-test-secret-0123456789abcdef';
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const ZEROS = { critical: 0, high: 0, medium: 0, low: 0, informational: 0 };

const hsKey = createSecretKey(Buffer.from(SECRET));
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PUBLIC_PEM = publicKey.export({ type: 'spki', format: 'pem' }).toString();

const nowS = () => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown> = {}) => ({ sub: 'alice', teams: [TEAM_A], iat: nowS(), exp: nowS() + 600, ...extra });
const hs = (extra: Record<string, unknown> = {}, key: KeyObject = hsKey) => signJwt(claims(extra), key, 'HS256');
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

const admin = () => hs({ sub: 'root', teams: [], admin: true });
const memberOfA = () => hs();

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

function client(baseUrl: () => string) {
  return async (path: string, token?: string, init: RequestInit = {}): Promise<Answer> => {
    const headers: Record<string, string> = {};
    // A bare token is sent as `Bearer <token>`; a value with a scheme (or the bare word) as is.
    if (token !== undefined) headers.Authorization = token.includes(' ') || token === 'Bearer' ? token : `Bearer ${token}`;
    const res = await fetch(`${baseUrl()}${path}`, { ...init, headers });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  };
}

const unauthorized = (error: string) => ({ code: 401, error, type: 'Unauthorized' });
const INVALID_QUERY = { code: 422, error: 'Invalid query params', type: 'Validation' };

describe('metrics API authentication (HS256 with JWT_SECRET, RS256 with JWT_PUBLIC_KEY)', () => {
  let svc: TestService;
  const get = client(() => svc.metricsApiUrl!);
  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { JWT_SECRET: SECRET, JWT_PUBLIC_KEY: PUBLIC_PEM } });
  });
  afterAll(() => svc.close());

  const rejected: [string, () => string | undefined, string][] = [
    ['no Authorization header', () => undefined, 'Missing bearer token'],
    ['a Basic scheme', () => 'Basic YWxpY2U6c2VjcmV0', 'Invalid token'],
    ['a Bearer scheme without token', () => 'Bearer', 'Invalid token'],
    ['a malformed token', () => 'not.a-jwt', 'Invalid token'],
    ['a token of two parts', () => `${b64({ alg: 'HS256' })}.${b64(claims())}`, 'Invalid token'],
    ['a wrong signature', () => hs({}, createSecretKey(Buffer.from('another-secret-another-secret-another'))), 'Invalid token'],
    ['alg none', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims({ admin: true }))}.`, 'Invalid token'],
    ['alg none with a signature part', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.c2ln`, 'Invalid token'],
    ['an algorithm that is not accepted (HS512)', () => `${b64({ alg: 'HS512', typ: 'JWT' })}.${b64(claims())}.c2ln`, 'Invalid token'],
    [
      'RS256 signed by another key pair',
      () => signJwt(claims(), generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, 'RS256'),
      'Invalid token',
    ],
    [
      'HS256 signed with the public key as HMAC secret (key confusion)',
      () => hs({}, createSecretKey(Buffer.from(PUBLIC_PEM))),
      'Invalid token',
    ],
    ['an expired token (beyond the 60 s leeway)', () => hs({ exp: nowS() - 120 }), 'Token expired'],
    ['a token not valid yet (beyond the 60 s leeway)', () => hs({ nbf: nowS() + 120 }), 'Token not yet valid'],
    ['a non-numeric exp', () => hs({ exp: 'tomorrow' }), 'Invalid token'],
    ['no sub', () => hs({ sub: undefined }), 'Invalid token claims'],
    ['an empty sub', () => hs({ sub: '' }), 'Invalid token claims'],
    ['a numeric sub', () => hs({ sub: 42 }), 'Invalid token claims'],
    ['teams as a string', () => hs({ teams: TEAM_A }), 'Invalid token claims'],
    ['teams holding a number', () => hs({ teams: [TEAM_A, 7] }), 'Invalid token claims'],
    ['teams null', () => hs({ teams: null }), 'Invalid token claims'],
    ['admin as a string', () => hs({ admin: 'true' }), 'Invalid token claims'],
  ];

  for (const [name, token, message] of rejected) {
    it(`given ${name}, when a team metric is requested, then it answers 401 with WWW-Authenticate: Bearer`, async () => {
      const res = await get(`/api/v1/teams/${TEAM_A}/stats/open`, token());
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body).toEqual(unauthorized(message));
    });
  }

  it('given exp and nbf within the 60 s leeway, when a team metric is requested, then the token is accepted', async () => {
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open`, hs({ exp: nowS() - 30 }))).status).toBe(200);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open`, hs({ nbf: nowS() + 30 }))).status).toBe(200);
  });

  it('given a token without exp, teams and admin, when its team-less user asks for a team, then it is authenticated but forbidden', async () => {
    const res = await get(`/api/v1/teams/${TEAM_A}/stats/open`, signJwt({ sub: 'bob' }, hsKey));
    expect(res.status).toBe(403);
  });

  it('given an RS256 token signed by the configured key pair, when a team metric is requested, then it answers 200', async () => {
    const res = await get(`/api/v1/teams/${TEAM_A}/stats/open`, signJwt(claims(), privateKey, 'RS256'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ open_issues: ZEROS });
  });

  it('given a lower-case bearer scheme, when a team metric is requested, then the token is accepted', async () => {
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open`, `bearer ${memberOfA()}`)).status).toBe(200);
  });
});

describe('metrics API authorization (SPEC §8.1)', () => {
  let svc: TestService;
  const get = client(() => svc.metricsApiUrl!);
  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { JWT_SECRET: SECRET } });
  });
  afterAll(() => svc.close());

  const endpoints = ['stats/open', 'stats/fixed', 'stats/mttr', 'stats/exposure', 'stats/exposure/current', 'stats/assets'];

  for (const path of endpoints) {
    it(`given a member of team A, when they read ${path} of team B, then it answers 403; of team A, 200`, async () => {
      const other = await get(`/api/v1/teams/${TEAM_B}/${path}`, memberOfA());
      expect(other.status).toBe(403);
      expect(other.body).toEqual({ code: 403, error: 'Not a member of this team', type: 'Forbidden' });
      expect((await get(`/api/v1/teams/${TEAM_A}/${path}`, memberOfA())).status).toBe(200);
    });

    it(`given a non-admin, when they read the global ${path}, then it answers 403; an admin gets 200`, async () => {
      const res = await get(`/api/v1/${path}`, memberOfA());
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ code: 403, error: 'Global metrics are for administrators only', type: 'Forbidden' });
      expect((await get(`/api/v1/${path}`, admin())).status).toBe(200);
    });
  }

  it('given a non-admin, when teams= lists a foreign team, then it answers 403; with only their own teams, 200', async () => {
    const foreign = await get(`/api/v1/stats/open?teams=${TEAM_A},${TEAM_B}`, memberOfA());
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({ code: 403, error: 'Not a member of every requested team', type: 'Forbidden' });
    expect((await get(`/api/v1/stats/open?teams=${TEAM_A}`, memberOfA())).status).toBe(200);
    expect((await get(`/api/v1/stats/open?teams=${TEAM_A}, ,${TEAM_A}`, memberOfA())).status).toBe(200);
    const both = hs({ teams: [TEAM_A, TEAM_B] });
    expect((await get(`/api/v1/stats/assets?teams=${TEAM_B},${TEAM_A}`, both)).status).toBe(200);
  });

  it('given a non-admin, when teams= is empty or holds only empty entries, then it is the global scope and answers 403', async () => {
    expect((await get('/api/v1/stats/open?teams=', memberOfA())).status).toBe(403);
    expect((await get('/api/v1/stats/open?teams=,%20,', memberOfA())).status).toBe(403);
  });

  it('given an admin, when any team is requested (even one nobody knows), then it answers 200 with zeros', async () => {
    const res = await get(`/api/v1/teams/${TEAM_B}/stats/mttr`, admin());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ mttr: { total: 0, ...ZEROS } });
  });

  it('given team ids compared as exact strings, when the path spells the member team in upper case, then it answers 403', async () => {
    expect((await get(`/api/v1/teams/${TEAM_A.toUpperCase()}/stats/open`, memberOfA())).status).toBe(403);
  });

  it('given a malformed team_id, when any caller asks, then it answers 422 "ID is malformed" (before authorization)', async () => {
    const body = { code: 422, error: 'ID is malformed', type: 'Validation' };
    expect(await get('/api/v1/teams/not-a-uuid/stats/open', memberOfA())).toMatchObject({ status: 422, body });
    expect(await get('/api/v1/teams/testteam/stats/assets', admin())).toMatchObject({ status: 422, body });
  });

  it('given a malformed team_id and no token, when asked, then authentication comes first (401)', async () => {
    expect((await get('/api/v1/teams/not-a-uuid/stats/open')).status).toBe(401);
  });

  it('given an unknown route, when asked with or without a token, then it answers 404 with the metrics body', async () => {
    const body = { code: 404, error: 'Record not found', type: 'Record not found' };
    expect(await get('/api/v1/nothing/here')).toMatchObject({ status: 404, body });
    expect(await get(`/api/v1/teams/${TEAM_A}/stats/coverage`, 'Bearer garbage')).toMatchObject({ status: 404, body });
    expect(await get('/stats/open', admin())).toMatchObject({ status: 404, body });
  });

  it('given a known path, when another method is used, then it answers 405 whatever the token', async () => {
    const res = await get('/api/v1/stats/open', undefined, { method: 'POST' });
    expect(res).toMatchObject({ status: 405, body: { code: 405, error: 'Method Not Allowed', type: 'Method Not Allowed' } });
  });

  it('given no token, when the healthcheck is requested, then it answers 200 OK', async () => {
    expect(await get('/api/v1/healthcheck')).toMatchObject({ status: 200, body: { status: 'OK' } });
  });

  it('given a trailing slash, when a metric is requested, then it is the same route', async () => {
    expect(await get(`/api/v1/teams/${TEAM_A}/stats/open/`, memberOfA())).toMatchObject({ status: 200, body: { open_issues: ZEROS } });
  });

  const invalid: [string, string][] = [
    ['a malformed date', `teams/${TEAM_A}/stats/open?minDate=2024-02-30`],
    ['a date that is not YYYY-MM-DD', `teams/${TEAM_A}/stats/exposure?atDate=06/01/2024`],
    ['atDate with minDate', `teams/${TEAM_A}/stats/fixed?atDate=2024-01-02&minDate=2024-01-01`],
    ['atDate with maxDate', `stats/open?atDate=2024-01-02&maxDate=2024-01-03`],
    ['minDate after maxDate', `teams/${TEAM_A}/stats/mttr?minDate=2024-01-05&maxDate=2024-01-04`],
    ['atDate on MTTR', `teams/${TEAM_A}/stats/mttr?atDate=2024-01-04`],
    ['atDate on the global MTTR', `stats/mttr?atDate=2024-01-04`],
    ['a non-numeric minScore', `teams/${TEAM_A}/stats/exposure/current?minScore=high`],
    ['a non-numeric maxScore', `stats/fixed?maxScore=1e3`],
    ['a teams entry that is not a UUID', `stats/assets?teams=${TEAM_A},testteam`],
  ];
  for (const [name, path] of invalid) {
    it(`given ${name}, when an admin asks, then it answers 422 "Invalid query params"`, async () => {
      expect(await get(`/api/v1/${path}`, admin())).toMatchObject({ status: 422, body: INVALID_QUERY });
    });
  }

  it('given parameters an endpoint does not list, when they are malformed, then they are ignored', async () => {
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/exposure?minDate=garbage&labels=x&page=0`, memberOfA())).status).toBe(200);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/assets?atDate=garbage&minScore=x&teams=nope`, memberOfA())).status).toBe(200);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open?teams=nope&team=nope`, memberOfA())).status).toBe(200);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/mttr?atDate=`, memberOfA())).status).toBe(200);
  });

  it('given a forbidden team and an invalid query, when asked, then authorization comes first (403)', async () => {
    expect((await get(`/api/v1/teams/${TEAM_B}/stats/open?minDate=bad`, memberOfA())).status).toBe(403);
    expect((await get('/api/v1/stats/open?teams=testteam', memberOfA())).status).toBe(403);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open?minDate=bad`, memberOfA())).status).toBe(422);
  });
});

describe('metrics API with other key configurations', () => {
  const servers: http.Server[] = [];
  afterAll(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
  });

  async function serve(jwt: { secret?: string; publicKey?: string; issuer?: string; audience?: string }): Promise<string> {
    const store = await freshStore();
    const keys = tokenKeys({ secret: jwt.secret, publicKey: jwt.publicKey, issuer: jwt.issuer, audience: jwt.audience }, '/nonexistent');
    const app = createMetricsApi({ store, suppression: new Suppression(store), log: createLogger('silent'), keys });
    const server = http.createServer(app.callback());
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('given only JWT_PUBLIC_KEY, when HS256 tokens arrive (even keyed with the public key), then they are rejected and RS256 accepted', async () => {
    const url = await serve({ publicKey: PUBLIC_PEM });
    const get = client(() => url);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open`, signJwt(claims(), privateKey, 'RS256'))).status).toBe(200);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open`, hs())).status).toBe(401);
    expect((await get(`/api/v1/teams/${TEAM_A}/stats/open`, hs({}, createSecretKey(Buffer.from(PUBLIC_PEM))))).status).toBe(401);
  });

  it('given JWT_SECRET only, when an RS256 token arrives, then it is rejected', async () => {
    const url = await serve({ secret: SECRET });
    expect((await client(() => url)(`/api/v1/teams/${TEAM_A}/stats/open`, signJwt(claims(), privateKey, 'RS256'))).status).toBe(401);
  });

  it('given JWT_ISSUER and JWT_AUDIENCE, when tokens lack them or carry others, then 401; when they match, 200', async () => {
    const url = await serve({ secret: SECRET, issuer: 'vulndb-issuer', audience: 'vulndb-metrics' });
    const get = client(() => url);
    const path = `/api/v1/teams/${TEAM_A}/stats/open`;
    expect((await get(path, hs())).status).toBe(401);
    expect((await get(path, hs({ iss: 'other', aud: 'vulndb-metrics' }))).status).toBe(401);
    expect((await get(path, hs({ iss: 'vulndb-issuer', aud: 'other' }))).status).toBe(401);
    expect((await get(path, hs({ iss: 'vulndb-issuer', aud: 'vulndb-metrics' }))).status).toBe(200);
  });

  it('given no issuer configured, when a token carries any iss and aud, then they are not checked', async () => {
    const url = await serve({ secret: SECRET });
    expect((await client(() => url)(`/api/v1/teams/${TEAM_A}/stats/open`, hs({ iss: 'anyone', aud: 'anything' }))).status).toBe(200);
  });
});
