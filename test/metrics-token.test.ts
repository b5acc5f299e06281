import { execFile } from 'node:child_process';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTeams, parseTtl } from '../src/cli/token.js';
import { dataDirSecret, SECRET_FILE, tokenKeys } from '../src/auth/keys.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * `vulndb token` and the token secret kept in DATA_DIR when neither JWT_SECRET nor JWT_PUBLIC_KEY
 * is configured (a fresh `npm start` must not leave the metrics API unusable).
 */

const run = promisify(execFile);
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const tmpDirs: string[] = [];
const tmpDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-token-'));
  tmpDirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Runs the real CLI with only the given JWT settings. */
function cli(args: string[], env: Record<string, string>) {
  return run(process.execPath, ['bin/vulndb.mjs', 'token', ...args], {
    env: { ...process.env, JWT_SECRET: '', JWT_PUBLIC_KEY: '', JWT_ISSUER: '', JWT_AUDIENCE: '', LOG_LEVEL: 'silent', ...env },
  });
}

const payloadOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());

describe('token lifetimes and teams of vulndb token', () => {
  it('given ttl texts with s, m, h, d or no unit, when parsed, then they are seconds', () => {
    expect([parseTtl('90'), parseTtl('90s'), parseTtl('15m'), parseTtl('1h'), parseTtl('7d')]).toEqual([90, 90, 900, 3600, 604_800]);
  });

  it('given a ttl that is zero, negative, fractional or of another unit, when parsed, then it is refused', () => {
    for (const bad of ['0', '0h', '-1h', '1.5h', '1w', 'h', '']) expect(() => parseTtl(bad), bad).toThrow(/duration/);
  });

  it('given team lists, when parsed, then entries are trimmed, deduplicated and must be UUIDs', () => {
    expect(parseTeams(` ${TEAM_A}, ${TEAM_B},${TEAM_A},`)).toEqual([TEAM_A, TEAM_B]);
    expect(() => parseTeams(`${TEAM_A},testteam`)).toThrow(/testteam/);
  });
});

describe('the token secret kept in DATA_DIR', () => {
  it('given an empty data folder, when the secret is needed, then it is generated once with mode 0600 and then reused', () => {
    const dir = tmpDir();
    const first = dataDirSecret(dir);
    expect(first.created).toBe(true);
    expect(first.secret.length).toBeGreaterThanOrEqual(32);
    expect(fs.statSync(path.join(dir, SECRET_FILE)).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual([SECRET_FILE]); // no temporary file left behind
    expect(dataDirSecret(dir)).toEqual({ secret: first.secret, created: false });
  });

  it('given JWT_SECRET or JWT_PUBLIC_KEY configured, when keys are built, then no secret file is written', () => {
    const dir = tmpDir();
    expect(tokenKeys({ secret: 's'.repeat(40), publicKey: undefined, issuer: undefined, audience: undefined }, dir).secretSource).toBe(
      'JWT_SECRET',
    );
    expect(fs.existsSync(path.join(dir, SECRET_FILE))).toBe(false);
  });

  it('given a secret file that holds too little, when keys are built, then it refuses to start', () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, SECRET_FILE), 'short\n', { mode: 0o600 });
    expect(() => tokenKeys({ secret: undefined, publicKey: undefined, issuer: undefined, audience: undefined }, dir)).toThrow(
      /no usable secret/,
    );
  });
});

describe('vulndb token against a service without JWT settings', () => {
  let dataDir: string;
  let svc: TestService;
  const get = (p: string, token: string) => fetch(`${svc.metricsApiUrl}/api/v1/${p}`, { headers: { Authorization: `Bearer ${token}` } });

  beforeAll(async () => {
    dataDir = tmpDir();
    svc = await startTestService({ worker: false, env: { DATA_DIR: dataDir, JWT_SECRET: '', JWT_PUBLIC_KEY: '' } });
  });
  afterAll(() => svc.close());

  it('given a fresh start, when the service is up, then it has generated the secret file in DATA_DIR', () => {
    expect(fs.statSync(path.join(dataDir, SECRET_FILE)).mode & 0o777).toBe(0o600);
  });

  it('given the CLI on the same DATA_DIR, when it mints a member token, then the service accepts it for that team only', async () => {
    const { stdout } = await cli(['--sub', 'alice', '--teams', TEAM_A, '--ttl', '2h'], { DATA_DIR: dataDir });
    const token = stdout.trim();
    const claims = payloadOf(token);
    expect(claims).toMatchObject({ sub: 'alice', teams: [TEAM_A], admin: false });
    expect(claims.exp - claims.iat).toBe(7200);
    expect((await get(`teams/${TEAM_A}/stats/open`, token)).status).toBe(200);
    expect((await get(`teams/${TEAM_B}/stats/open`, token)).status).toBe(403);
    expect((await get('stats/open', token)).status).toBe(403);
  });

  it('given --admin, when the token is used on a global metric, then it answers 200', async () => {
    const { stdout } = await cli(['--sub', 'root', '--admin'], { DATA_DIR: dataDir });
    expect(payloadOf(stdout.trim())).toMatchObject({ sub: 'root', teams: [], admin: true });
    expect((await get('stats/assets', stdout.trim())).status).toBe(200);
  });

  it('given --ingest, when minted, then the token carries the ingest scope and no other', async () => {
    const { stdout } = await cli(['--sub', 'scanner', '--ingest'], { DATA_DIR: dataDir });
    expect(payloadOf(stdout.trim())).toMatchObject({ sub: 'scanner', teams: [], admin: false, scopes: ['ingest'] });
    const plain = await cli(['--sub', 'alice'], { DATA_DIR: dataDir });
    expect(payloadOf(plain.stdout.trim()).scopes).toBeUndefined();
  });

  it('given another DATA_DIR, when the CLI mints a token there, then this service rejects it', async () => {
    const { stdout } = await cli(['--sub', 'mallory', '--admin'], { DATA_DIR: tmpDir() });
    expect((await get('stats/open', stdout.trim())).status).toBe(401);
  });

  it('given JWT_SECRET, when the CLI mints a token, then it is signed with it (and rejected by this service)', async () => {
    const other = tmpDir();
    const secret = 'configured-secret-configured-secret-0123';
    const { stdout } = await cli(['--sub', 'carol', '--admin'], { DATA_DIR: other, JWT_SECRET: secret });
    const [header, payload, signature] = stdout.trim().split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(signature).toBe(createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url'));
    expect(fs.existsSync(path.join(other, SECRET_FILE))).toBe(false);
    expect((await get('stats/open', stdout.trim())).status).toBe(401);
  });

  it('given only JWT_PUBLIC_KEY, or a bad --ttl, when the CLI runs, then it fails without printing a token', async () => {
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await expect(cli(['--sub', 'x'], { DATA_DIR: tmpDir(), JWT_PUBLIC_KEY: pem })).rejects.toMatchObject({
      stdout: '',
      stderr: expect.stringContaining('JWT_SECRET is unset while JWT_PUBLIC_KEY or JWT_JWKS_URL is configured'),
    });
    await expect(cli(['--sub', 'x', '--ttl', '3x'], { DATA_DIR: dataDir })).rejects.toMatchObject({
      stdout: '',
      stderr: expect.stringContaining('--ttl'),
    });
  });
});
