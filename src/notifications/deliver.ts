import { createHmac } from 'node:crypto';
import type { DeliveryJob } from '../queue/contract.js';
import type { Subscription } from './subscriptions.js';

/**
 * One HTTP delivery (SPEC §9.1): POST of the rendered body with the event headers and, for a
 * subscription with a secret, the HMAC-SHA256 of the exact bytes sent. Anything but a 2xx answer
 * within the timeout throws, and BullMQ retries the job with backoff. Redirects are not followed:
 * a receiver that moved answers non-2xx until its subscription is changed.
 */

export const DELIVERY_TIMEOUT_MS = 10_000;

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

export async function deliver(subscription: Subscription, job: DeliveryJob, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<number> {
  let response: Response;
  try {
    response = await fetch(subscription.url, {
      method: 'POST',
      headers: deliveryHeaders(subscription, job),
      body: job.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const reason =
      err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : String((err as Error)?.cause ?? err);
    throw new DeliveryFailed(`delivery to ${subscription.url} failed: ${reason}`, { cause: err });
  }
  // The answer's body is not ours to read; releasing it frees the connection.
  await response.body?.cancel().catch(() => {});
  if (response.status < 200 || response.status > 299) {
    throw new DeliveryFailed(`delivery to ${subscription.url} failed: the receiver answered ${response.status}`);
  }
  return response.status;
}
