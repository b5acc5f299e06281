import fs from 'node:fs';
import { Suppression } from '../src/decisions/suppression.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JwksKeySet } from '../src/auth/jwks.js';
import { callerFromClaims } from '../src/auth/tokens.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createMetricsApi } from '../src/metrics/app.js';
import { SECRET_FILE, tokenKeys } from '../src/auth/keys.js';
import { signJwt } from '../src/metrics/sign.js';
import { freshStore, testDataDir } from './support/engine.js';
import { type JwksServer, type ProviderKey, providerKey, providerToken, startJwksServer } from './support/jwks-server.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * SPEC §8.1: tokens of an identity provider, verified with the key of their `kid` in the provider's
 * JSON Web Key Set (RS256 and ES256), its refresh rules (at start, hourly, on an unknown kid at most
 * once a minute, the last set kept when the provider is unreachable), and the mapping of the
 * provider's claim names (JWT_TEAMS_CLAIM, JWT_ADMIN_CLAIM, JWT_ADMIN_VALUE).
 */

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);

const rsa = providerKey('rsa-2026', 'RS256');
const ec = providerKey('ec-2026', 'ES256');

async function status(url: string, token: string, init: RequestInit = {}): Promise<number> {
  const res = await fetch(url, { ...init, headers: { ...init.headers, Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('a service with JWT_JWKS_URL and the claims of a provider (groups, roles)', () => {
  let idp: JwksServer;
  let svc: TestService;
  const metrics = (p: string) => `${svc.metricsApiUrl}/api/v1${p}`;
  const db = (p: string) => `${svc.dbApiUrl}${p}`;
  const admin = (k: ProviderKey) => providerToken(k, { sub: 'root', roles: ['offline_access', 'vulndb-admin'] });
  const memberOfA = (k: ProviderKey) => providerToken(k, { sub: 'alice', groups: [TEAM_A], roles: ['offline_access'] });

  beforeAll(async () => {
    idp = await startJwksServer([rsa, ec]);
    svc = await startTestService({
      worker: false,
      env: { JWT_JWKS_URL: idp.url, JWT_TEAMS_CLAIM: 'groups', JWT_ADMIN_CLAIM: 'roles', DB_API_AUTH: 'jwt' },
    });
  });
  afterAll(async () => {
    await svc.close();
    await idp.stop();
  });

  it('given the set was fetched at start, when tokens signed by the RSA and by the EC key arrive, then both are accepted', async () => {
    expect(idp.fetches).toBe(1);
    for (const k of [rsa, ec]) {
      expect(await status(metrics('/stats/open'), admin(k))).toBe(200);
      expect(await status(metrics(`/teams/${TEAM_A}/stats/open`), memberOfA(k))).toBe(200);
    }
    expect(idp.fetches).toBe(1);
  });

  it('given JWT_ADMIN_CLAIM=roles, when roles holds vulndb-admin or not, then the caller is admin or not', async () => {
    expect(await status(metrics('/stats/open'), admin(rsa))).toBe(200);
    expect(await status(metrics('/stats/open'), memberOfA(rsa))).toBe(403);
    // vulndb's own boolean claim no longer counts; a boolean under the mapped name keeps its meaning.
    expect(await status(metrics('/stats/open'), providerToken(rsa, { sub: 'x', admin: true }))).toBe(403);
    expect(await status(metrics('/stats/open'), providerToken(rsa, { sub: 'x', roles: true }))).toBe(200);
  });

  it('given JWT_TEAMS_CLAIM=groups, when groups lists team A, then team A is readable and team B is not', async () => {
    expect(await status(metrics(`/teams/${TEAM_A}/stats/open`), memberOfA(ec))).toBe(200);
    expect(await status(metrics(`/teams/${TEAM_B}/stats/open`), memberOfA(ec))).toBe(403);
    expect(await status(metrics(`/teams/${TEAM_A}/stats/open`), providerToken(ec, { sub: 'x', teams: [TEAM_A] }))).toBe(403);
  });

  it('given mapped claims of the wrong type, when they arrive, then 401', async () => {
    expect(await status(metrics(`/teams/${TEAM_A}/stats/open`), providerToken(ec, { sub: 'x', groups: TEAM_A }))).toBe(401);
    expect(await status(metrics('/stats/open'), providerToken(ec, { sub: 'x', roles: 'vulndb-admin' }))).toBe(401);
  });

  it('given DB_API_AUTH=jwt, when the database API is asked with provider tokens, then the same mapping scopes it', async () => {
    expect(await status(db('/findings'), admin(ec))).toBe(200);
    expect(await status(db(`/findings?team=${TEAM_A}`), memberOfA(rsa))).toBe(200);
    expect(await status(db(`/findings?team=${TEAM_B}`), memberOfA(rsa))).toBe(403);
    const post = {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ identifier: 'x.example.com', teams: [TEAM_A] }),
    };
    expect(await status(db('/targets'), memberOfA(rsa), post)).toBe(403);
    expect(await status(db('/targets'), admin(rsa), post)).toBe(201);
  });

  it('given tokens the set does not vouch for, when they arrive, then each is 401 on both APIs', async () => {
    const claims = { sub: 'mallory', roles: ['vulndb-admin'], groups: [TEAM_A], iat: nowS(), exp: nowS() + 600 };
    const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const { createSecretKey } = await import('node:crypto');
    const refused: [string, string][] = [
      ['an unknown kid', signJwt(claims, providerKey('rsa-other', 'RS256').privateKey, 'RS256', 'rsa-other')],
      ['a known kid signed by another key', signJwt(claims, providerKey('x', 'RS256').privateKey, 'RS256', rsa.kid)],
      ['alg none', `${b64({ alg: 'none', typ: 'JWT', kid: rsa.kid })}.${b64(claims)}.`],
      ['HS256 keyed with the RSA public key (PEM)', signJwt(claims, createSecretKey(Buffer.from(rsaPem)), 'HS256', rsa.kid)],
      ['RS256 naming the EC key', signJwt(claims, rsa.privateKey, 'RS256', ec.kid)],
      ['ES256 naming the RSA key', signJwt(claims, ec.privateKey, 'ES256', rsa.kid)],
      ['RS256 without kid', signJwt(claims, rsa.privateKey, 'RS256')],
      ['RS384 with a known kid', `${b64({ alg: 'RS384', kid: rsa.kid })}.${b64(claims)}.c2ln`],
    ];
    for (const [name, token] of refused) {
      expect(await status(metrics('/stats/open'), token), name).toBe(401);
      expect(await status(db('/findings'), token), name).toBe(401);
    }
  });

  it('given only JWT_JWKS_URL, when the service started, then it generated no HS256 secret', () => {
    expect(fs.existsSync(path.join(svc.config.dataDir, SECRET_FILE))).toBe(false);
  });
});

describe('the key set refresh rules (injected clock)', () => {
  const servers: http.Server[] = [];
  let idp: JwksServer | undefined;
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
    await idp?.stop();
    idp = undefined;
  });

  /** The metrics API verifying with `jwks` (admin from `roles`), and the URL of a global endpoint. */
  async function serve(jwks: JwksKeySet): Promise<(token: string) => Promise<number>> {
    const store = await freshStore();
    const jwt = {
      secret: undefined,
      publicKey: undefined,
      issuer: undefined,
      audience: undefined,
      jwksUrl: 'set',
      claims: { teams: 'groups', admin: 'roles', adminValue: 'vulndb-admin' },
    };
    const app = createMetricsApi({
      store,
      suppression: new Suppression(store),
      log: createLogger('silent'),
      keys: tokenKeys(jwt, '/nonexistent', jwks),
    });
    const server = http.createServer(app.callback());
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/stats/open`;
    return (token) => status(url, token);
  }

  const adminOf = (k: ProviderKey) => providerToken(k, { sub: 'root', roles: ['vulndb-admin'] });
  const clock = () => {
    let t = Date.parse('2026-11-27T12:00:00Z');
    return { now: () => t, advance: (ms: number) => (t += ms) };
  };
  const SECOND = 1000;
  const HOUR = 3600 * SECOND;

  it('given a key rotated mid-run, when its tokens arrive, then they are accepted after the next refresh, at most one a minute', async () => {
    idp = await startJwksServer([rsa, ec]);
    const c = clock();
    const jwks = new JwksKeySet({ url: idp.url, log: createLogger('silent'), now: c.now });
    expect(await jwks.refresh()).toBe(true);
    const ask = await serve(jwks);
    expect([await ask(adminOf(rsa)), await ask(adminOf(ec)), idp.fetches]).toEqual([200, 200, 1]);

    const rotated = providerKey('rsa-2027', 'RS256');
    idp.publish([ec, rotated]);
    c.advance(10 * SECOND); // within the minute of the last fetch: an unknown kid fetches nothing
    expect([await ask(adminOf(rotated)), await ask(adminOf(rsa)), idp.fetches]).toEqual([401, 200, 1]);

    c.advance(51 * SECOND); // a minute after the last fetch: the unknown kid fetches the set once, for all
    const together = Array.from({ length: 5 }, () => adminOf(rotated));
    expect(await Promise.all(together.map(ask))).toEqual([200, 200, 200, 200, 200]);
    expect(idp.fetches).toBe(2);
    expect([await ask(adminOf(rsa)), idp.fetches]).toEqual([401, 2]); // removed; no second fetch
    const strangers = Array.from({ length: 20 }, (_, i) => adminOf(providerKey(`unknown-${i}`, 'ES256')));
    expect(await Promise.all(strangers.map(ask))).toEqual(strangers.map(() => 401));
    expect(idp.fetches).toBe(2);

    c.advance(60 * SECOND); // a flood of unknown kids a minute later: one fetch, shared
    expect(await Promise.all(strangers.map(ask))).toEqual(strangers.map(() => 401));
    expect(idp.fetches).toBe(3);

    c.advance(HOUR); // an hour old: the next token, of a known kid, refreshes the set
    expect([await ask(adminOf(rotated)), idp.fetches]).toEqual([200, 4]);
  });

  it('given the provider unreachable or answering no key set, when the set is due, then the last set is kept', async () => {
    idp = await startJwksServer([rsa, ec]);
    const c = clock();
    const warnings: string[] = [];
    const log = createLogger('warn', {}, (line) => warnings.push(line));
    const jwks = new JwksKeySet({ url: idp.url, log, now: c.now });
    expect(await jwks.refresh()).toBe(true);
    const ask = await serve(jwks);

    for (const broken of [
      'not json',
      '{"keys": []}',
      '{"keys": "x"}',
      JSON.stringify({ keys: [{ kty: 'oct', kid: 'h', k: 'c2VjcmV0' }] }),
    ]) {
      idp.publishRaw(broken);
      c.advance(HOUR);
      expect([await ask(adminOf(rsa)), await ask(adminOf(ec))], broken).toEqual([200, 200]);
    }
    const fetched = idp.fetches;
    expect(fetched).toBe(5);

    await idp.stop();
    c.advance(HOUR);
    expect([await ask(adminOf(rsa)), await ask(adminOf(ec)), await ask(adminOf(providerKey('new', 'RS256')))]).toEqual([200, 200, 401]);
    expect(jwks.kids.sort()).toEqual([ec.kid, rsa.kid].sort());
    expect(warnings.filter((l) => l.includes('keeping the last set')).length).toBe(5);
    idp = undefined;
  });

  it('given the provider unreachable at start, when it answers later, then its tokens are accepted from the next allowed fetch', async () => {
    idp = await startJwksServer([rsa]);
    idp.publishRaw('<html>maintenance</html>');
    const c = clock();
    const jwks = new JwksKeySet({ url: idp.url, log: createLogger('silent'), now: c.now });
    expect(await jwks.refresh()).toBe(false);
    const ask = await serve(jwks);
    expect(await ask(adminOf(rsa))).toBe(401);
    idp.publish([rsa]);
    expect(await ask(adminOf(rsa))).toBe(401); // the minute since the failed fetch has not passed
    c.advance(60 * SECOND);
    expect(await ask(adminOf(rsa))).toBe(200);
  });

  it('given a set that cannot be reached at all, when refreshed, then it answers false and leaves no key', async () => {
    const gone = await startJwksServer([rsa]);
    await gone.stop();
    const jwks = new JwksKeySet({ url: gone.url, log: createLogger('silent'), timeoutMs: 2000 });
    expect(await jwks.refresh()).toBe(false);
    expect(await jwks.keyFor(rsa.kid, 'RS256')).toBeUndefined();
  });
});

describe('claim mapping and its configuration', () => {
  const roles = { teams: 'groups', admin: 'roles', adminValue: 'vulndb-admin' };

  it('given a provider payload, when mapped, then teams and admin come from the configured claims', () => {
    expect(callerFromClaims({ sub: 'a', groups: [TEAM_A], roles: ['x', 'vulndb-admin'] }, roles)).toEqual({
      sub: 'a',
      teams: [TEAM_A],
      admin: true,
      scopes: [],
    });
    expect(callerFromClaims({ sub: 'a', roles: ['x'] }, roles)?.admin).toBe(false);
    expect(callerFromClaims({ sub: 'a', roles: ['ops'] }, { ...roles, adminValue: 'ops' })?.admin).toBe(true);
    expect(callerFromClaims({ sub: 'a', teams: [TEAM_A], admin: true })).toEqual({ sub: 'a', teams: [TEAM_A], admin: true, scopes: [] });
    expect(callerFromClaims({ sub: 'a', roles: 'vulndb-admin' }, roles)).toBeUndefined();
    expect(callerFromClaims({ sub: 'a' }, { ...roles, teams: 'constructor' })?.teams).toEqual([]);
    expect(callerFromClaims({ groups: [TEAM_A] }, roles)).toBeUndefined();
  });

  it('given JWT_* variables, when loaded, then the key set URL must be https (http on loopback) and empty names mean defaults', () => {
    const base = { DATA_DIR: testDataDir() };
    expect(() => loadConfig({ ...base, JWT_JWKS_URL: 'http://idp.example.com/jwks' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, JWT_JWKS_URL: 'not a url' })).toThrow(/JWT_JWKS_URL/);
    expect(loadConfig({ ...base, JWT_JWKS_URL: 'https://idp.example.com/certs' }).jwt.jwksUrl).toBe('https://idp.example.com/certs');
    expect(loadConfig({ ...base, JWT_JWKS_URL: 'http://127.0.0.1:8180/certs' }).jwt.jwksUrl).toBe('http://127.0.0.1:8180/certs');
    expect(loadConfig({ ...base, JWT_TEAMS_CLAIM: '', JWT_ADMIN_CLAIM: ' roles ' }).jwt.claims).toEqual({
      teams: 'teams',
      admin: 'roles',
      adminValue: 'vulndb-admin',
    });
  });
});
