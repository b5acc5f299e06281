import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UnrecoverableError, Worker, type Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { spawnService } from './support/child-service.js';
import { REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * SPEC §10.1 (issue 31): without ADMIN_TOKEN the queue board only reads — every action bull-board
 * offers is refused and the queue is left as it was; with ADMIN_TOKEN every admin route but the
 * probes needs the token, and the actions work with it; an ADMIN_HOST beyond loopback without a
 * token does not start.
 */

const TOKEN = 'admin-token-for-tests-0123456789';
const BOARD = '/admin/queues';

interface QueueState {
  counts: Record<string, number>;
  paused: boolean;
  ids: string[];
}

async function stateOf(queue: Queue): Promise<QueueState> {
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized');
  const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized']);
  return { counts, paused: await queue.isPaused(), ids: jobs.map((j) => String(j.id)).sort() };
}

/** One failed, three waiting and one delayed job on `queue` (no worker of the service runs). */
async function seedJobs(queue: Queue): Promise<{ failed: string; waiting: string; delayed: string }> {
  const failedJob = await queue.add('check', { n: 0 });
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const worker = new Worker(
    queue.name,
    async () => {
      throw new UnrecoverableError('failed on purpose');
    },
    { connection, prefix: queue.opts.prefix },
  );
  await new Promise<void>((resolve) => worker.on('failed', () => resolve()));
  await worker.close();
  connection.disconnect();
  const waiting = await queue.add('check', { n: 1 });
  await queue.add('check', { n: 2 });
  await queue.add('check', { n: 3 });
  const delayed = await queue.add('check', { n: 4 }, { delay: 3_600_000 });
  expect(await queue.getJobState(failedJob.id!)).toBe('failed');
  return { failed: failedJob.id!, waiting: waiting.id!, delayed: delayed.id! };
}

/** Every action of bull-board's API (routes.js of @bull-board/api 9.10), on the `checks` queue. */
function actions(q: string, ids: { failed: string; waiting: string; delayed: string }): [method: string, path: string, body?: unknown][] {
  const api = `${BOARD}/api/queues`;
  return [
    ['POST', `${api}/${q}/add`, { name: 'check', data: { injected: true }, options: {} }],
    ['PUT', `${api}/${q}/clean/failed`],
    ['PUT', `${api}/${q}/clean/delayed`],
    ['PUT', `${api}/${q}/clean/waiting`],
    ['PUT', `${api}/${q}/${ids.waiting}/clean`],
    ['PUT', `${api}/${q}/pause`],
    ['PUT', `${api}/pause`],
    ['PUT', `${api}/${q}/resume`],
    ['PUT', `${api}/resume`],
    ['PUT', `${api}/${q}/retry/failed`],
    ['PUT', `${api}/${q}/${ids.failed}/retry`],
    ['PUT', `${api}/${q}/promote`],
    ['PUT', `${api}/${q}/${ids.delayed}/promote`],
    ['PUT', `${api}/${q}/empty`],
    ['PUT', `${api}/${q}/obliterate`, { force: true }],
    ['PATCH', `${api}/${q}/${ids.waiting}/update-data`, { data: { replaced: true } }],
    ['PATCH', `${api}/${q}/${ids.delayed}/delay`, { delay: 0 }],
    ['PATCH', `${api}/${q}/${ids.waiting}/priority`, { priority: 1 }],
    ['PUT', `${api}/${q}/concurrency`, { concurrency: 1 }],
    ['PUT', `${api}/${q}/rate-limit`, { max: 1, duration: 1000 }],
    ['DELETE', `${api}/${q}/${ids.waiting}`],
    // A method override header is no way around the method check.
    ['POST', `${api}/${q}/pause`, undefined],
  ];
}

const send = (base: string, [method, p, body]: [string, string, unknown?], auth?: string) =>
  fetch(`${base}${p}`, {
    method,
    headers: {
      'Content-Type': 'application/json',
      'X-HTTP-Method-Override': 'PUT',
      ...(auth ? { Authorization: auth } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

describe('the admin listener without ADMIN_TOKEN', () => {
  let svc: TestService;
  let ids: Awaited<ReturnType<typeof seedJobs>>;
  beforeAll(async () => {
    svc = await startTestService({ worker: false });
    ids = await seedJobs(svc.queue!);
  });
  afterAll(() => svc?.close());

  it('refuses every queue-board action and leaves the queue as it was', async () => {
    const before = await stateOf(svc.queue!);
    expect(before.counts).toMatchObject({ waiting: 3, delayed: 1, failed: 1 });
    for (const action of actions('checks', ids)) {
      const res = await send(svc.adminUrl, action);
      expect({ action: action.slice(0, 2), status: res.status }).toEqual({ action: action.slice(0, 2), status: 403 });
      expect(await res.json()).toEqual({ message: 'Forbidden: the queue board is read-only without ADMIN_TOKEN' });
    }
    expect(await stateOf(svc.queue!)).toEqual(before);
  });

  it('given a paused queue, refuses to resume it', async () => {
    await svc.queue!.pause();
    try {
      for (const p of [`${BOARD}/api/queues/checks/resume`, `${BOARD}/api/queues/resume`]) {
        expect((await send(svc.adminUrl, ['PUT', p])).status).toBe(403);
      }
      expect(await svc.queue!.isPaused()).toBe(true);
    } finally {
      await svc.queue!.resume();
    }
  });

  it('shows the board, the queues and a job (reading is allowed), and the probes and metrics answer', async () => {
    const page = await fetch(`${svc.adminUrl}${BOARD}`);
    expect(page.status).toBe(200);
    await page.text();
    const queues = (await (await fetch(`${svc.adminUrl}${BOARD}/api/queues`)).json()) as { queues: { name: string }[] };
    const checks = queues.queues.find((q: { name: string }) => q.name === 'checks');
    // bull-board's own read-only mode is on as well: its UI shows no action buttons.
    expect(checks).toMatchObject({ readOnlyMode: true, allowRetries: false });
    expect((await fetch(`${svc.adminUrl}${BOARD}/api/queues/checks/${ids.waiting}`)).status).toBe(200);
    for (const p of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${svc.adminUrl}${p}`)).status, p).toBe(200);
  });
});

describe('the admin listener with ADMIN_TOKEN', () => {
  let svc: TestService;
  let ids: Awaited<ReturnType<typeof seedJobs>>;
  const bearer = `Bearer ${TOKEN}`;
  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { ADMIN_TOKEN: TOKEN } });
    ids = await seedJobs(svc.queue!);
  });
  afterAll(() => svc?.close());

  it('answers the probes without the token, and every other route only with it', async () => {
    for (const p of ['/healthz', '/readyz']) expect((await fetch(`${svc.adminUrl}${p}`)).status, p).toBe(200);
    for (const p of ['/metrics', BOARD, `${BOARD}/api/queues`, `${BOARD}/api/queues/checks/${ids.waiting}`, '/no-such-route']) {
      for (const auth of [undefined, 'Bearer wrong-token-of-some-length', `Bearer ${TOKEN}x`, TOKEN, `Basic ${TOKEN}`]) {
        const res = await fetch(`${svc.adminUrl}${p}`, auth ? { headers: { Authorization: auth } } : {});
        expect({ p, auth, status: res.status }).toEqual({ p, auth, status: 401 });
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      }
    }
    // The backup route (SPEC §14) sits behind the same middleware.
    const backup = await fetch(`${svc.adminUrl}/admin/backup`, { method: 'POST', body: JSON.stringify({ dir: '/tmp/x' }) });
    expect(backup.status).toBe(401);
    expect((await fetch(`${svc.adminUrl}/metrics`, { headers: { Authorization: bearer } })).status).toBe(200);
    const queues = (await (await fetch(`${svc.adminUrl}${BOARD}/api/queues`, { headers: { Authorization: bearer } })).json()) as {
      queues: { name: string }[];
    };
    expect(queues.queues.find((q: { name: string }) => q.name === 'checks')).toMatchObject({ readOnlyMode: false });
  });

  it('refuses every queue-board action without the token, leaving the queue unchanged', async () => {
    const before = await stateOf(svc.queue!);
    for (const action of actions('checks', ids)) {
      expect({ action: action.slice(0, 2), status: (await send(svc.adminUrl, action)).status }).toEqual({
        action: action.slice(0, 2),
        status: 401,
      });
    }
    expect(await stateOf(svc.queue!)).toEqual(before);
  });

  it('performs the actions with the token: pause, resume, add, promote, retry, remove, clean and empty', async () => {
    const q = svc.queue!;
    const act = async (method: string, p: string, body?: unknown) => {
      const res = await send(svc.adminUrl, [method, `${BOARD}/api/queues/checks${p}`, body], bearer);
      expect({ p, status: res.status }).toMatchObject({ p, status: expect.any(Number) });
      expect(res.status, p).toBeLessThan(300);
    };
    await act('PUT', '/pause');
    expect(await q.isPaused()).toBe(true);
    await act('PUT', '/resume');
    expect(await q.isPaused()).toBe(false);
    await act('POST', '/add', { name: 'check', data: { added: true }, options: {} });
    expect(await q.getWaitingCount()).toBe(4);
    await act('PUT', `/${ids.delayed}/promote`);
    expect(await q.getJobState(ids.delayed)).toBe('waiting');
    await act('PUT', `/${ids.failed}/retry`);
    expect(await q.getJobState(ids.failed)).toBe('waiting');
    await act('PUT', `/${ids.waiting}/clean`);
    expect(await q.getJob(ids.waiting)).toBeUndefined();
    await act('PUT', '/empty');
    expect(await q.getWaitingCount()).toBe(0);
  });
});

describe('ADMIN_HOST beyond loopback', () => {
  it('is refused without ADMIN_TOKEN, naming both variables, and accepted with one or on loopback', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', '192.168.0.10', 'admin.example.com', '[::]']) {
      expect(() => loadConfig({ ADMIN_HOST: host }), host).toThrow(ConfigError);
      expect(() => loadConfig({ ADMIN_HOST: host }), host).toThrow(/ADMIN_HOST.*ADMIN_TOKEN/);
      expect(loadConfig({ ADMIN_HOST: host, ADMIN_TOKEN: TOKEN }).admin).toMatchObject({ host, token: TOKEN });
    }
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(loadConfig({ ADMIN_HOST: host }).admin, host).toMatchObject({ host, token: undefined });
    }
    expect(() => loadConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN: must be at least 16 characters/);
  });

  it('makes `vulndb serve` exit with code 2 and the message, before it opens anything', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-admin-host-'));
    try {
      const svc = await spawnService({ dataDir, redisUrl: 'redis://127.0.0.1:1', env: { ADMIN_HOST: '0.0.0.0' } });
      const exit = await svc.exited;
      expect(exit).toEqual({ code: 2, signal: null });
      const said = svc.logs.map((l) => l.msg).join('\n');
      expect(said).toMatch(/ADMIN_HOST=0\.0\.0\.0.*ADMIN_TOKEN/);
      expect(fs.existsSync(path.join(dataDir, 'clickhouse'))).toBe(false);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
