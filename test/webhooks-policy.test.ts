import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { boundedCreator, createSubscription, listSubscriptions } from '../src/notifications/subscriptions.js';
import { isPublicAddress, type Resolver } from '../src/notifications/url-policy.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * Where deliveries may go and how many subscriptions there may be, at subscription (SPEC §9.1,
 * §10): a service with WEBHOOK_ALLOW_PRIVATE=false and a small MAX_WEBHOOKS. Names resolve
 * through an injected table (no DNS traffic); the checks on what they resolve to are the service's.
 */

const PUBLIC = '93.184.215.14';
const names: Record<string, string[]> = {
  'hooks.example.com': [PUBLIC],
  'v6.example.com': ['2606:4700:4700::1111'],
  'loopback.example.com': ['127.0.0.1'],
  'private.example.com': ['10.1.2.3'],
  'mixed.example.com': [PUBLIC, '192.168.1.20'],
};
const resolve: Resolver = async (name) => {
  const found = names[name];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const MAX = 3;
let svc: TestService;

const post = (body: unknown) =>
  fetch(`${svc.metricsApiUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
const list = async (): Promise<{ id: string; url: string }[]> =>
  (await json(fetch(`${svc.metricsApiUrl}/api/v1/webhooks`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }))).webhooks;
const remove = (id: string) =>
  fetch(`${svc.metricsApiUrl}/api/v1/webhooks/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
const removeAll = async () => {
  for (const w of await list()) expect((await remove(w.id)).status).toBe(204);
};

beforeAll(async () => {
  svc = await startTestService({
    worker: false,
    env: { JWT_SECRET: METRICS_SECRET, WEBHOOK_ALLOW_PRIVATE: 'false', MAX_WEBHOOKS: String(MAX) },
    notifications: { resolve },
  });
}, 60_000);
afterAll(() => svc?.close());

describe('webhook destinations at subscription', () => {
  it('refuses loopback, private, link-local, IPv4-mapped and other non-public hosts, and names resolving to them, with 422 Validation', async () => {
    const refused = [
      'http://127.0.0.1:9464/admin/queues/api/queues/checks/add',
      'http://127.0.0.1:6379/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://localhost:8080/hook',
      'http://LOCALHOST./hook',
      'http://loopback.example.com/hook',
      'http://10.0.0.5/hook',
      'http://172.16.8.1/hook',
      'http://192.168.1.1/hook',
      'http://private.example.com/hook',
      'http://mixed.example.com/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/',
      'http://0.0.0.0:8080/',
      'http://255.255.255.255/',
      'http://224.0.0.1/',
      'http://192.0.2.10/',
      'http://[::1]:8080/hook',
      'http://[::]/',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[::127.0.0.1]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[ff02::1]/',
      'http://[2001:db8::1]/',
    ];
    for (const url of refused) {
      const body = await json(post({ url }), 422);
      expect(body, url).toEqual({
        code: 422,
        error: expect.stringMatching(/^url: the host .* is not a public address/),
        type: 'Validation',
      });
    }
    expect(await list()).toEqual([]);
  });

  it('refuses user-info, schemes other than http(s) and URLs over 2,048 characters with 422 Validation', async () => {
    const refused = [
      'https://user:pass@hooks.example.com/hook',
      'https://user@hooks.example.com/hook',
      'ftp://hooks.example.com/in',
      'gopher://hooks.example.com/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'redis://127.0.0.1:6379',
      `https://hooks.example.com/${'a'.repeat(2049 - 'https://hooks.example.com/'.length)}`,
    ];
    for (const url of refused) expect(await json(post({ url }), 422), url).toMatchObject({ code: 422, type: 'Validation' });
    expect(JSON.stringify(await list())).not.toContain('pass');
  });

  it('accepts public addresses and names resolving only to them, and a name that does not resolve yet', async () => {
    const accepted = [
      'https://hooks.example.com/hook',
      'https://v6.example.com/hook',
      `https://hooks.example.com/${'a'.repeat(2048 - 'https://hooks.example.com/'.length)}`,
    ];
    for (const url of accepted) expect((await json(post({ url }), 201)).webhook.url, url).toBe(url);
    await removeAll();
    // Checked again at each delivery (test/webhooks-connect.test.ts): a later answer decides then.
    expect((await json(post({ url: 'https://not-yet.example.com/hook' }), 201)).webhook.url).toBe('https://not-yet.example.com/hook');
    expect((await json(post({ url: 'http://[2606:4700:4700::1111]/' }), 201)).webhook.url).toBe('http://[2606:4700:4700::1111]/');
    await removeAll();
  });

  it('never returns the password of a URL stored before user-info was refused', async () => {
    await createSubscription(svc.store, { url: 'https://alice:s3cr3t@hooks.example.com/hook', secret: '', teams: [], events: [] });
    const listed = await list();
    expect(listed.map((w) => w.url)).toEqual(['https://alice@hooks.example.com/hook']);
    await removeAll();
  });
});

describe('the subscription cap', () => {
  it(`refuses the subscription beyond MAX_WEBHOOKS (${MAX}) with 422 "too many webhooks"; a deletion makes room`, async () => {
    const made: string[] = [];
    for (let i = 0; i < MAX; i++) made.push((await json(post({ url: `https://hooks.example.com/${i}` }), 201)).webhook.id);
    expect(await json(post({ url: 'https://hooks.example.com/over' }), 422)).toEqual({
      code: 422,
      error: 'too many webhooks',
      type: 'Validation',
    });
    expect(await list()).toHaveLength(MAX);
    expect((await remove(made[0]!)).status).toBe(204);
    await json(post({ url: 'https://hooks.example.com/again' }), 201);
    expect(await list()).toHaveLength(MAX);
    await removeAll();
  });

  it('holds under concurrent POSTs: exactly MAX_WEBHOOKS live, every 201 live, every other answer 422', async () => {
    await json(post({ url: 'https://hooks.example.com/first' }), 201);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => post({ url: `https://hooks.example.com/race-${i}` })));
    const bodies: any[] = await Promise.all(answers.map((r) => r.json()));
    const created = bodies.filter((_, i) => answers[i]!.status === 201).map((b) => b.webhook.id);
    const others = bodies.filter((_, i) => answers[i]!.status !== 201);
    expect(others.every((b) => b.code === 422 && b.error === 'too many webhooks')).toBe(true);
    const live = await list();
    expect(created).toHaveLength(MAX - 1);
    expect(live).toHaveLength(MAX);
    expect(live.map((w) => w.id)).toEqual(expect.arrayContaining(created));
    await removeAll();
  });

  it('holds across processes sharing the store (creators without a common lock): never more than the cap live', async () => {
    await json(post({ url: 'https://hooks.example.com/first' }), 201);
    // Eight processes, one POST each, all at once: each counts 1 live before any insert lands.
    const input = (i: number) => ({ url: `https://hooks.example.com/p-${i}`, secret: '', teams: [], events: [] });
    const made = await Promise.all(Array.from({ length: 8 }, (_, i) => boundedCreator(svc.store, MAX)(input(i))));
    const live = (await listSubscriptions(svc.store)).map((s) => s.id);
    expect(live.length).toBeLessThanOrEqual(MAX);
    expect(live).toEqual(expect.arrayContaining(made.flatMap((s) => (s ? [s.id] : []))));
    await removeAll();
  });
});

describe('configuration and the address table', () => {
  it('defaults to public addresses only and 100 subscriptions, and refuses unreadable values', () => {
    expect(loadConfig({}).webhooks).toEqual({ allowPrivate: false, maxSubscriptions: 100 });
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', MAX_WEBHOOKS: '5' }).webhooks).toEqual({ allowPrivate: true, maxSubscriptions: 5 });
    for (const env of [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, { MAX_WEBHOOKS: '0' }, { MAX_WEBHOOKS: 'many' }]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
    }
  });

  it('tells public addresses from the rest', () => {
    const publicOnes = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '::ffff:8.8.8.8', '2606:4700:4700::1111', '2a00:1450::1'];
    const others = [
      ...['0.0.0.0', '0.1.2.3', '10.255.0.1', '100.127.255.254', '127.0.0.1', '127.9.9.9', '169.254.169.254', '172.16.0.1'],
      ...['172.31.255.255', '192.0.0.8', '192.0.2.1', '192.168.0.1', '198.18.0.1', '198.51.100.1', '203.0.113.9', '224.0.0.251'],
      ...['239.255.255.250', '240.0.0.1', '255.255.255.255', '::', '::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::127.0.0.1'],
      ...['64:ff9b::7f00:1', 'fc00::1', 'fdff::1', 'fe80::1', 'febf::1', 'ff02::1', '2001:db8::1', '2002:7f00:1::1', '3fff::1'],
      ...['not an address', ''],
    ];
    for (const a of publicOnes) expect(isPublicAddress(a), a).toBe(true);
    for (const a of others) expect(isPublicAddress(a), a).toBe(false);
  });
});
