import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';

/** The webhook subscription routes of the metrics API (SPEC §9.1, errors and order of §8.2). */

let svc: TestService;
const TEAM = randomUUID();
const MEMBER = metricsToken({ teams: [TEAM] });

function call(method: string, path: string, opts: { token?: string | null; body?: unknown; raw?: string } = {}) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (opts.token !== null) headers.Authorization = `Bearer ${opts.token ?? ADMIN_TOKEN}`;
  const body = method === 'GET' ? undefined : (opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)));
  return fetch(`${svc.metricsApiUrl}/api/v1${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
}

beforeAll(async () => {
  svc = await startTestService({ worker: false, env: { JWT_SECRET: METRICS_SECRET } });
}, 60_000);
afterAll(() => svc?.close());

describe('webhook subscriptions', () => {
  it('an admin subscribes, lists and deletes; the secret is never returned', async () => {
    const made = await json(
      call('POST', '/webhooks', {
        body: { url: 'https://hooks.example.com/vulndb', secret: 'hush', teams: [TEAM], events: ['finding.fixed'] },
      }),
      201,
    );
    expect(made.webhook).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: 'https://hooks.example.com/vulndb',
      teams: [TEAM],
      events: ['finding.fixed'],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    const bare = await json(call('POST', '/webhooks', { body: { url: 'http://127.0.0.1:9/x' } }), 201);
    expect(bare.webhook).toMatchObject({ teams: [], events: [] });

    const listed = await json(call('GET', '/webhooks'));
    // Ordered by created_at, whole seconds, then id: these two may share their second.
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
    expect([...listed.webhooks].sort(byId)).toEqual([made.webhook, bare.webhook].sort(byId));
    expect(JSON.stringify(listed)).not.toContain('hush');

    const deleted = await call('DELETE', `/webhooks/${made.webhook.id}`);
    expect(deleted.status).toBe(204);
    expect((await json(call('GET', '/webhooks'))).webhooks).toEqual([bare.webhook]);
    // Gone: a second delete, an unknown id and a malformed one are 404.
    for (const id of [made.webhook.id, randomUUID(), 'not-a-uuid']) {
      expect(await json(call('DELETE', `/webhooks/${id}`), 404)).toEqual({
        code: 404,
        error: 'Record not found',
        type: 'Record not found',
      });
    }
  });

  it('refuses URLs other than http(s) and invalid bodies with 422 Validation', async () => {
    const bodies: unknown[] = [
      { url: 'ftp://files.example.com/in' },
      { url: 'javascript:alert(1)' },
      { url: 'file:///etc/passwd' },
      { url: 'not a url' },
      { url: 42 },
      {},
      { url: 'https://ok.example.com', events: ['finding.exploded'] },
      { url: 'https://ok.example.com', teams: ['not-a-team-id'] },
      { url: 'https://ok.example.com', secret: 7 },
      [],
    ];
    for (const body of bodies) {
      const answer = await json(call('POST', '/webhooks', { body }), 422);
      expect(answer).toMatchObject({ code: 422, type: 'Validation' });
    }
    expect(await json(call('POST', '/webhooks', { raw: '{"url": ' }), 422)).toMatchObject({ code: 422, type: 'Validation' });
    expect((await json(call('GET', '/webhooks'))).webhooks.map((w: { url: string }) => w.url)).not.toContain('ftp://files.example.com/in');
  });

  it('answers 403 to callers who are not admin and 401 without a token, before reading the body', async () => {
    for (const [method, path] of [
      ['POST', '/webhooks'],
      ['GET', '/webhooks'],
      ['DELETE', `/webhooks/${randomUUID()}`],
    ] as const) {
      expect(await json(call(method, path, { token: MEMBER, body: { url: 'ftp://x' } }), 403)).toMatchObject({
        code: 403,
        type: 'Forbidden',
      });
      const anonymous = await call(method, path, { token: null, body: { url: 'https://x.example.com' } });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    }
    const put = await call('PUT', '/webhooks');
    expect(put.status).toBe(405);
  });
});
