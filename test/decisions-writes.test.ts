import { randomUUID } from 'node:crypto';
import { Suppression } from '../src/decisions/suppression.js';
import http from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionResponse, decisionsResponse } from '../src/decisions/schema.js';
import { activeDecisionIds } from '../src/decisions/store.js';
import { closeServer, listen } from '../src/http/servers.js';
import { findingLocks } from '../src/locks/target-locks.js';
import { createLogger } from '../src/log.js';
import { createMetricsApi } from '../src/metrics/app.js';
import { tokenKeys } from '../src/auth/keys.js';
import type { Store } from '../src/storage/gateway.js';
import { StoreError } from '../src/storage/store-errors.js';
import { epoch } from './support/api.js';
import { METRICS_SECRET, metricsToken } from './support/metrics.js';
import { worked } from './support/reports.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * SPEC §12.3 "Writes are atomic and serialized" and §5.6 "Every write surface" on the decision
 * routes: any text is taken (U+FFFD for a lone surrogate), a PUT that fails after validation
 * changes nothing, concurrent writes on one finding through two apps with their own Redis lock
 * clients take effect one after another, and a foreign finding's 404 costs what an unknown id's does.
 */

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const ADMIN = metricsToken({ sub: 'root', admin: true });
const MEMBER_B = metricsToken({ sub: 'bob', teams: [TEAM_B] });
const FALSE_POSITIVE = { decision: 'false_positive', reason: 'The panel is a honeypot.' };

const clock = epoch('2024-02-01T00:00:00Z');
let svc: TestService;
let finding: string;

beforeAll(async () => {
  // Loopback webhook URLs are the test's own (SPEC §9.1 WEBHOOK_ALLOW_PRIVATE); none is ever dialled with success.
  svc = await startTestService({ now: () => clock, env: { JWT_SECRET: METRICS_SECRET, WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_A] }), 201);
  for (const r of [worked.r1, worked.r2]) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
  finding = (await json(svc.db('/findings'))).findings[0].id;
});
afterAll(() => svc.close());

/** A metrics API app on a free loopback port. */
async function listenApp(app: { callback: () => http.RequestListener }) {
  const server = http.createServer(app.callback());
  const url = await listen(server, 0, '127.0.0.1');
  return { url, close: () => closeServer(server) };
}

const call = (base: string, method: string, path: string, bearer: string, body?: unknown) =>
  fetch(`${base}/api/v1/${path}`, {
    method,
    headers: { Authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
const put = (body: unknown, bearer = ADMIN, base = svc.metricsApiUrl!) => call(base, 'PUT', `findings/${finding}/decision`, bearer, body);
const trail = async () =>
  decisionsResponse.parse(await json(call(svc.metricsApiUrl!, 'GET', `findings/${finding}/decisions`, ADMIN))).decisions;
const activeNow = () => activeDecisionIds(svc.store, finding, clock * 1000);

describe('any text in a decision (SPEC §5.6)', () => {
  it('takes a reason with a lone surrogate: 200, and the reason is stored and shown with U+FFFD', async () => {
    // Sent as JSON's \ud83d escape, as a client's JSON encoder writes it.
    const made = decisionResponse.parse(await json(put('{"decision":"false_positive","reason":"bad \\ud83d text"}')));
    expect(made.decision.reason).toBe('bad \ufffd text');
    expect((await trail())[0]).toMatchObject({ id: made.decision.id, reason: 'bad \ufffd text' });
    expect(await activeNow()).toEqual([made.decision.id]);
  });

  it("records a token's sub with a lone surrogate, and NULs, as given but well formed", async () => {
    const odd = metricsToken({ sub: 'eve\udc00\u0000', admin: true });
    const made = decisionResponse.parse(await json(put({ decision: 'false_positive', reason: 'nul \u0000 inside' }, odd)));
    expect(made.decision).toMatchObject({ by: 'eve\ufffd\u0000', reason: 'nul \u0000 inside' });
    expect((await trail())[0]).toMatchObject({ by: 'eve\ufffd\u0000', reason: 'nul \u0000 inside' });
  });
});

describe('any text on the other write surfaces of the metrics API and POST /targets (SPEC §5.6)', () => {
  it('takes a webhook whose url and secret hold lone surrogates and NULs (201) and stores them well formed; odd teams and events are 422, not 500', async () => {
    const body = '{"url":"http://127.0.0.1:1/hook\\ud800\\u0000x","secret":"s\\udfff\\u0000"}';
    const made = await json(call(svc.metricsApiUrl!, 'POST', 'webhooks', ADMIN, body), 201);
    // As given, or as a URL parser writes it (percent-encoded): well formed either way.
    expect(['http://127.0.0.1:1/hook\ufffd\u0000x', 'http://127.0.0.1:1/hook%EF%BF%BD%00x']).toContain(made.webhook.url);
    const [stored] = await svc.store.query<{ secret: string }>('SELECT secret FROM webhooks WHERE id = {id:UUID}', { id: made.webhook.id });
    expect(stored?.secret).toBe('s\ufffd\u0000');
    await json(call(svc.metricsApiUrl!, 'DELETE', `webhooks/${made.webhook.id}`, ADMIN), 204);
    // Refused for what they are, not for their text.
    const refused = await call(
      svc.metricsApiUrl!,
      'POST',
      'webhooks',
      ADMIN,
      '{"url":"http://127.0.0.1:1/","teams":["\\ud800"],"events":["\\u0000"]}',
    );
    expect(refused.status).toBe(422);
  });

  it("reads with a token whose teams hold a lone surrogate and a NUL: the caller's teams, no 500", async () => {
    const odd = metricsToken({ sub: 'mallory', teams: ['\ud800', '\u0000', TEAM_A] });
    const res = await call(svc.metricsApiUrl!, 'GET', `findings/${finding}/decisions`, odd);
    expect(res.status).toBe(200);
  });

  it('POST /targets takes lone surrogates and NULs in the identifier and teams, and shows them with U+FFFD', async () => {
    const res = await svc.db('/targets', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"identifier":"odd\\udc00\\u0000.example.com","teams":["team\\ud800","nul\\u0000"]}',
    });
    const { target } = await json(res, 201);
    expect(target).toMatchObject({ identifier: 'odd\ufffd\u0000.example.com', teams: ['team\ufffd', 'nul\u0000'] });
  });
});

/** The service's store with the `n`-th statement (counted from `start()`) failing; `calls` counts them. */
function failingStore(store: Store) {
  let calls = -1;
  let failAt = 0;
  const wrap = (name: 'query' | 'insert' | 'command' | 'queryFields') =>
    (async (...args: unknown[]) => {
      if (calls >= 0 && ++calls === failAt) throw new StoreError(`injected failure of statement ${failAt}`);
      return (store[name] as (...a: unknown[]) => Promise<unknown>).apply(store, args);
    }) as never;
  const proxy: Store = {
    ...store,
    query: wrap('query'),
    insert: wrap('insert'),
    command: wrap('command'),
    queryFields: wrap('queryFields'),
  };
  return {
    proxy,
    /** From now on, statements are counted; the `n`-th fails (0: none). */
    start: (n: number) => {
      calls = 0;
      failAt = n;
    },
    calls: () => calls,
  };
}

describe('a PUT that fails after validation (SPEC §12.3 "Writes are atomic")', () => {
  it('leaves the previous decision active and the trail unchanged, whichever statement fails, or applies in full', async () => {
    const store = failingStore(svc.store);
    const app = await listenApp(
      createMetricsApi({
        store: store.proxy,
        suppression: new Suppression(store.proxy),
        log: createLogger('silent'),
        keys: tokenKeys(svc.config.jwt, svc.config.dataDir),
        now: () => clock,
      }),
    );
    try {
      // How many statements a PUT runs once the finding is found (the lookup is statement 1).
      store.start(0);
      await json(put(FALSE_POSITIVE, ADMIN, app.url));
      const statements = store.calls();
      expect(statements).toBeGreaterThan(3);
      let untouched = 0;
      for (let n = 2; n <= statements; n++) {
        const before = await trail();
        const [previous] = await activeNow();
        store.start(n);
        const res = await put({ decision: 'accepted_risk', reason: `attempt ${n}`, expires_at: '2024-03-01T00:00:00Z' }, ADMIN, app.url);
        store.start(0);
        expect(res.status, `statement ${n} of ${statements} failed`).toBe(500);
        const after = await trail();
        const active = await activeNow();
        expect(active).toHaveLength(1);
        if (after.length === before.length) {
          // Nothing stored: the decision active before still is, and nobody revoked it.
          untouched++;
          expect(after).toEqual(before);
          expect(active).toEqual([previous]);
        } else {
          // Stored in full (a step after the insert failed): the new decision replaced the old one.
          expect(after.slice(1)).toEqual(
            before.map((d) => (d.id === previous ? { ...d, revoked_at: after[0]!.created_at, revoked_by: 'root' } : d)),
          );
          expect(active).toEqual([after[0]!.id]);
        }
      }
      // The statements up to and including the insert leave everything as it was.
      expect(untouched).toBeGreaterThanOrEqual(3);
    } finally {
      await app.close();
    }
  });
});

describe('concurrent writes on one finding from two API apps (SPEC §12.3 "serialized")', () => {
  let apps: { url: string; close: () => Promise<void> }[] = [];
  let connections: Redis[] = [];

  beforeAll(async () => {
    // Two metrics APIs on the one store (an embedded data folder belongs to one process) and the
    // one Redis, each with its own lock client: processes as far as the locks can tell.
    connections = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
    const keys = tokenKeys(svc.config.jwt, svc.config.dataDir);
    apps = await Promise.all(
      connections.map((redis) =>
        listenApp(
          createMetricsApi({
            store: svc.store,
            suppression: svc.suppression,
            log: createLogger('silent'),
            keys,
            now: () => clock,
            decisionLocks: findingLocks(redis, svc.names),
          }),
        ),
      ),
    );
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    for (const c of connections) c.disconnect();
  });

  it('30 concurrent PUTs: all answered 200, exactly one decision active, the 29 others revoked in the audit trail', async () => {
    const reasons = Array.from({ length: 30 }, (_, i) => `concurrent ${i} ${randomUUID()}`);
    const answers = await Promise.all(reasons.map((reason, i) => put({ decision: 'false_positive', reason }, ADMIN, apps[i % 2]!.url)));
    expect(answers.map((a) => a.status)).toEqual(reasons.map(() => 200));
    const made = (await trail()).filter((d) => reasons.includes(d.reason));
    expect(made).toHaveLength(30);
    const active = made.filter((d) => d.revoked_at === null);
    expect(active).toHaveLength(1);
    expect(await activeNow()).toEqual([active[0]!.id]);
    // One after another: each decision but the last was revoked when (and by whom) the next was made.
    const ordered = [...made].reverse();
    for (let i = 0; i + 1 < ordered.length; i++) expect(ordered[i]!.revoked_by).toBe('root');
    expect(ordered.at(-1)!.revoked_at).toBeNull();
  });

  it('concurrent PUTs and DELETEs: at most one decision active once answered, every other one revoked', async () => {
    const reasons = Array.from({ length: 12 }, (_, i) => `mixed ${i} ${randomUUID()}`);
    const writes = reasons.flatMap((reason, i) => {
      const base = apps[i % 2]!.url;
      const del = i % 3 === 0 ? [call(base, 'DELETE', `findings/${finding}/decision`, ADMIN)] : [];
      return [put({ decision: 'false_positive', reason }, ADMIN, base), ...del];
    });
    const statuses = (await Promise.all(writes)).map((a) => a.status);
    for (const s of statuses) expect([200, 204, 404]).toContain(s);
    const made = (await trail()).filter((d) => reasons.includes(d.reason));
    expect(made).toHaveLength(12);
    const active = await activeNow();
    expect(active.length).toBeLessThanOrEqual(1);
    expect(made.filter((d) => d.revoked_at === null).map((d) => d.id)).toEqual(active);
  });
});

describe('the 404 of a foreign finding and of an unknown id (SPEC §12.3)', () => {
  it('take the same time: over 300 interleaved requests (150 of each), each median within 1.2x of the other', async () => {
    const timed = async (id: string) => {
      const started = performance.now();
      const res = await call(svc.metricsApiUrl!, 'PUT', `findings/${id}/decision`, MEMBER_B, FALSE_POSITIVE);
      await res.text();
      expect(res.status).toBe(404);
      return performance.now() - started;
    };
    for (let i = 0; i < 10; i++) await timed(i % 2 === 0 ? finding : randomUUID());
    const foreign: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 150; i++) {
      // Alternating which goes first, so that drift in the machine's load touches both alike.
      if (i % 2 === 0) {
        foreign.push(await timed(finding));
        unknown.push(await timed(randomUUID()));
      } else {
        unknown.push(await timed(randomUUID()));
        foreign.push(await timed(finding));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const [f, u] = [median(foreign), median(unknown)];
    console.log(`404 medians: foreign finding ${f.toFixed(2)} ms, unknown id ${u.toFixed(2)} ms`);
    expect(f / u).toBeLessThanOrEqual(1.2);
    expect(u / f).toBeLessThanOrEqual(1.2);
  });
});
