import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDeliverer, DeliveryFailed, MAX_ANSWER_BYTES } from '../src/notifications/deliver.js';
import type { Subscription } from '../src/notifications/subscriptions.js';
import { DestinationRefused, destinationProblem, type Resolver } from '../src/notifications/url-policy.js';
import type { DeliveryJob } from '../src/queue/contract.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * The deliverer's side of SPEC §9.1: the address actually dialled is checked (resolve, check,
 * connect to what was checked), redirects are not followed, an answer body is read at most
 * 64 KiB. Host names resolve through an injected resolver (no DNS traffic); the checks on its
 * answers and the connections are real, to receivers on loopback.
 */

const PUBLIC = '93.184.215.14';
const job: DeliveryJob = { webhookId: randomUUID(), eventId: randomUUID(), type: 'finding.opened', body: '{"hello":"receiver"}' };
const subscriptionTo = (url: string): Subscription => ({ id: job.webhookId, url, secret: '', teams: [], events: [], createdAt: 0 });

/** A resolver answering from a table, recording the names asked; unknown names do not resolve. */
function tableResolver(table: Record<string, string[]>) {
  const asked: string[] = [];
  const resolve: Resolver = async (name) => {
    asked.push(name);
    const found = table[name];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, asked };
}

let receiver: Receiver;
const closers: (() => unknown)[] = [];
const port = () => new URL(receiver.url).port;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
afterAll(() => receiver?.close());

function deliverer(resolve: Resolver, allowPrivate: boolean, timeoutMs = 5000) {
  const d = createDeliverer({ allowPrivate, resolve }, timeoutMs);
  closers.push(() => d.close());
  return d;
}

/** A server on loopback answering every request with `handler`. */
async function server(handler: http.RequestListener): Promise<string> {
  const s = http.createServer(handler);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  closers.push(() => {
    s.closeAllConnections();
    return new Promise((resolve) => s.close(resolve));
  });
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

describe('the address a delivery dials', () => {
  it('is the one the resolver gave and the check passed: a name for loopback is delivered when private addresses are allowed', async () => {
    const { resolve, asked } = tableResolver({ 'receiver.test': ['127.0.0.1'] });
    const result = await deliverer(resolve, true).deliver(subscriptionTo(`http://receiver.test:${port()}/named`), job);
    expect(result.status).toBe(200);
    expect(asked).toEqual(['receiver.test']);
    const [got] = receiver.on('/named');
    expect(got?.headers.host).toBe(`receiver.test:${port()}`);
    expect(got?.raw).toBe(job.body);
  });

  it('is refused, without retry and without a connection, when the name resolves to loopback and private addresses are not allowed', async () => {
    const { resolve } = tableResolver({ 'receiver.test': ['127.0.0.1'] });
    const attempt = deliverer(resolve, false).deliver(subscriptionTo(`http://receiver.test:${port()}/refused`), job);
    await expect(attempt).rejects.toBeInstanceOf(DestinationRefused);
    await expect(attempt).rejects.toThrow(/receiver\.test \(resolves to 127\.0\.0\.1\) is not a public address/);
    expect(receiver.on('/refused')).toEqual([]);
  });

  it('is checked again at each delivery: a name public at subscription and loopback later is refused then', async () => {
    const answers = [[PUBLIC], ['127.0.0.1']];
    const asked: string[] = [];
    const changing: Resolver = async (name) => {
      asked.push(name);
      return answers.shift()!.map((address) => ({ address, family: 4 }));
    };
    const policy = { allowPrivate: false, resolve: changing };
    const url = `http://rebinding.test:${port()}/rebound`;
    expect(await destinationProblem(url, policy)).toBeUndefined();
    await expect(deliverer(changing, false).deliver(subscriptionTo(url), job)).rejects.toBeInstanceOf(DestinationRefused);
    expect(asked).toEqual(['rebinding.test', 'rebinding.test']);
    expect(receiver.on('/rebound')).toEqual([]);
  });

  it('is checked for https too, before any TLS handshake', async () => {
    const { resolve, asked } = tableResolver({ 'secure.test': ['127.0.0.1'] });
    const attempt = deliverer(resolve, false).deliver(subscriptionTo(`https://secure.test:${port()}/tls`), job);
    await expect(attempt).rejects.toBeInstanceOf(DestinationRefused);
    expect(asked).toEqual(['secure.test']);
    expect(receiver.on('/tls')).toEqual([]);
  });

  it('is refused when any of the addresses a name resolves to is not public', async () => {
    const { resolve } = tableResolver({ 'mixed.test': [PUBLIC, '10.0.0.7'] });
    await expect(deliverer(resolve, false).deliver(subscriptionTo('http://mixed.test/'), job)).rejects.toThrow(/resolves to 10\.0\.0\.7/);
  });

  it('is checked without a lookup when the URL holds an address (stored while private addresses were allowed)', async () => {
    const { resolve, asked } = tableResolver({});
    for (const host of ['127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '169.254.169.254']) {
      const attempt = deliverer(resolve, false).deliver(subscriptionTo(`http://${host}:${port()}/literal`), job);
      await expect(attempt, host).rejects.toBeInstanceOf(DestinationRefused);
    }
    expect(asked).toEqual([]);
    expect(receiver.on('/literal')).toEqual([]);
  });

  it('refuses a stored URL with user-info, and no failure reason names its password or path', async () => {
    const { resolve } = tableResolver({});
    const withPassword = deliverer(resolve, true).deliver(subscriptionTo(`http://user:hunter2@127.0.0.1:${port()}/x`), job);
    await expect(withPassword).rejects.toBeInstanceOf(DestinationRefused);
    await expect(withPassword).rejects.not.toThrow(/hunter2/);
    const failing = await server((_req, res) => res.writeHead(500).end());
    const reason = await deliverer(resolve, true)
      .deliver(subscriptionTo(`${failing}/hook/s3cr3t-path?token=s3cr3t-query`), job)
      .catch((err: Error) => err);
    expect(reason).toBeInstanceOf(DeliveryFailed);
    expect((reason as Error).message).toBe(`delivery to ${failing} failed: the receiver answered 500`);
  });
});

describe('what a delivery does with the answer', () => {
  it('does not follow a redirect: the attempt fails and the target receives nothing', async () => {
    const target = `${receiver.url}/redirect-target`;
    const moving = await server((_req, res) => res.writeHead(302, { Location: target }).end());
    const attempt = deliverer(tableResolver({}).resolve, true).deliver(subscriptionTo(`${moving}/moved`), job);
    await expect(attempt).rejects.toThrow(/answered 302 \(redirects are not followed\)/);
    await new Promise((r) => setTimeout(r, 200));
    expect(receiver.on('/redirect-target')).toEqual([]);
  });

  it('reads an answer body at most 64 KiB: a body that never ends still completes the delivery', async () => {
    let written = 0;
    let closed = false;
    const endless = await server((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (!closed && res.write(chunk)) written += chunk.length;
        if (!closed) res.once('drain', pump);
      };
      res.on('close', () => {
        closed = true;
      });
      pump();
    });
    const started = performance.now();
    const result = await deliverer(tableResolver({}).resolve, true, 10_000).deliver(subscriptionTo(`${endless}/big`), job);
    expect(result).toEqual({ status: 200, bytesRead: MAX_ANSWER_BYTES });
    // Dropped well before the timeout, not read to an end that never comes.
    expect(performance.now() - started).toBeLessThan(5000);
    const deadline = Date.now() + 5000;
    while (!closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('reads a small answer whole and keeps the connection for the next delivery', async () => {
    const sockets = new Set<unknown>();
    const small = await server((req, res) => {
      sockets.add(req.socket);
      res.writeHead(204).end();
    });
    const d = deliverer(tableResolver({}).resolve, true);
    expect(await d.deliver(subscriptionTo(`${small}/a`), job)).toEqual({ status: 204, bytesRead: 0 });
    expect(await d.deliver(subscriptionTo(`${small}/b`), job)).toEqual({ status: 204, bytesRead: 0 });
    expect(sockets.size).toBe(1);
  });
});
