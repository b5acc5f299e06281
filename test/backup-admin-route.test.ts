import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountBackupRoute } from '../src/backup/admin-routes.js';
import { CommitGate } from '../src/locks/commit-gate.js';
import { silentLogger } from '../src/log.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { testStoreConfig } from './support/engine.js';

/** POST /admin/backup's refusals (src/backup/admin-routes.ts), before any snapshot starts; its token is the listener's (test/admin-access.test.ts). */

let store: Store;
let server: http.Server;
let url: string;

beforeAll(async () => {
  store = await openStore(testStoreConfig());
  const router = new Router();
  mountBackupRoute(router, { store, gate: new CommitGate(), log: silentLogger });
  const app = new Koa().use(router.routes()).use(router.allowedMethods());
  server = http.createServer(app.callback()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/backup`;
});
afterAll(async () => {
  server.close();
  await store.close();
});

const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body,
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { message: string } }));

describe('POST /admin/backup', () => {
  it('refuses a body that is not {"dir": <string>} (400), not JSON (415), and a relative folder (422)', async () => {
    expect(await post('{"dir": 3}')).toMatchObject({ status: 400, body: { message: expect.stringContaining('invalid body') } });
    expect((await post('{"dir": "/tmp/x", "extra": 1}')).status).toBe(400);
    expect((await post('not json')).status).toBe(400);
    expect((await post('dir=/tmp/x', { 'Content-Type': 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect(await post('{"dir": "backups/today"}')).toMatchObject({
      status: 422,
      body: { message: expect.stringContaining('absolute path') },
    });
  });

  it('answers 405 to a GET', async () => {
    expect((await fetch(url)).status).toBe(405);
  });
});
