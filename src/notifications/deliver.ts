import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { DeliveryJob } from '../queue/contract.js';
import type { Subscription } from './subscriptions.js';
import { checkAddresses, type DestinationPolicy, DestinationRefused, formProblem, hostOf, originOf } from './url-policy.js';

/**
 * One HTTP delivery (SPEC §9.1): POST of the rendered body with the event headers and, for a
 * subscription with a secret, the HMAC-SHA256 of the exact bytes sent. Anything but a 2xx answer
 * within the timeout throws, and BullMQ retries the job with backoff. Redirects are not followed:
 * a 3xx is a failed attempt. The address dialled is the one checked: the agents' `lookup`
 * resolves the name, refuses any non-public answer (DestinationRefused, not retried) and hands
 * the checked addresses to the socket, so nothing resolves the name a second time. Reasons name
 * the URL's origin only: paths and queries often carry the receiver's own tokens.
 */

export const DELIVERY_TIMEOUT_MS = 10_000;
/** SPEC §9.1: a receiver's answer body is read at most this far, then the connection is dropped. */
export const MAX_ANSWER_BYTES = 64 * 1024;

export class DeliveryFailed extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DeliveryFailed';
  }
}

export const signatureOf = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

export function deliveryHeaders(subscription: Pick<Subscription, 'secret'>, job: DeliveryJob): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'vulndb-webhooks',
    'X-Vulndb-Event': job.type,
    'X-Vulndb-Delivery': job.eventId,
    ...(subscription.secret !== '' ? { 'X-Vulndb-Signature': signatureOf(subscription.secret, job.body) } : {}),
  };
}

export interface DeliveryResult {
  status: number;
  /** Bytes of the answer's body read (at most MAX_ANSWER_BYTES). */
  bytesRead: number;
}

export interface Deliverer {
  deliver(subscription: Subscription, job: DeliveryJob): Promise<DeliveryResult>;
  close(): void;
}

/** The socket's name lookup: resolve, check every address, connect to a checked one. */
function guardedLookup(policy: DestinationPolicy): LookupFunction {
  return (hostname, options, callback) => {
    policy
      .resolve(hostname)
      .then((found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const addresses = family ? found.filter((a) => a.family === family) : found;
        if (addresses.length === 0) throw Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' });
        checkAddresses(hostname, addresses, policy);
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      })
      .catch((err: NodeJS.ErrnoException) => callback(err, '', 0));
  };
}

/** Reads at most `limit` bytes of the answer, then stops; resolves with what was read. */
function drain(response: http.IncomingMessage, limit: number): Promise<number> {
  return new Promise((resolve) => {
    let read = 0;
    const done = () => resolve(read);
    response.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read >= limit) {
        read = Math.min(read, limit);
        // Whatever else the receiver sends is dropped with its connection.
        response.destroy();
        done();
      }
    });
    response.on('end', done);
    response.on('error', done);
    response.on('close', done);
  });
}

/** Deliveries under `policy`, each cut at `timeoutMs`; close() drops the idle connections. */
export function createDeliverer(policy: DestinationPolicy, timeoutMs = DELIVERY_TIMEOUT_MS): Deliverer {
  const lookup = guardedLookup(policy);
  const agents = { http: new http.Agent({ keepAlive: true, lookup }), https: new https.Agent({ keepAlive: true, lookup }) };

  const deliver = async (subscription: Subscription, job: DeliveryJob): Promise<DeliveryResult> => {
    const form = formProblem(subscription.url);
    if (form !== undefined) throw new DestinationRefused(`the subscription's URL is refused: ${form}`);
    const url = new URL(subscription.url);
    const fail = (reason: string, cause?: unknown) =>
      new DeliveryFailed(`delivery to ${originOf(url)} failed: ${reason}`, cause === undefined ? undefined : { cause });
    const host = hostOf(url);
    // An address in the URL is dialled as is, without a lookup: checked here.
    if (isIP(host) !== 0) checkAddresses(host, [{ address: host, family: isIP(host) }], policy);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<DeliveryResult>((resolve, reject) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        request.destroy(fail(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const request = client.request(url, {
        method: 'POST',
        headers: { ...deliveryHeaders(subscription, job), 'Content-Length': Buffer.byteLength(job.body) },
        agent: url.protocol === 'https:' ? agents.https : agents.http,
      });
      request.on('error', (err) => {
        clearTimeout(timer);
        reject(err instanceof DestinationRefused || err instanceof DeliveryFailed ? err : fail(String(err.message), err));
      });
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        drain(response, MAX_ANSWER_BYTES).then((bytesRead) => {
          clearTimeout(timer);
          // A body still coming at the timeout is no answer within it.
          if (timedOut) reject(fail(`no answer within ${timeoutMs} ms`));
          else if (status >= 200 && status <= 299) resolve({ status, bytesRead });
          else if (status >= 300 && status <= 399) reject(fail(`the receiver answered ${status} (redirects are not followed)`));
          else reject(fail(`the receiver answered ${status}`));
        });
      });
      request.end(job.body);
    });
  };

  return {
    deliver,
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
