import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver on loopback for the webhook tests: records every request (path, headers, raw
 * body) and answers as `answer` says for its path — a status, or `hang` (never answers).
 */

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  at: number;
}

export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  /** Decides the answer to the nth (1-based) request on a path; default 200. */
  answer: (path: string, nth: number) => Answer;
  on: (path: string) => Received[];
  /** Waits until `predicate` holds over what arrived (polling), or fails after `timeoutMs`. */
  until: (predicate: (all: Received[]) => boolean, timeoutMs?: number, what?: string) => Promise<void>;
  close: () => Promise<void>;
}

export const hmac = (secret: string, raw: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const counts = new Map<string, number>();
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    received,
    answer: () => 200,
    on: (path) => received.filter((r) => r.path === path),
    until: async (predicate, timeoutMs = 30_000, what = 'deliveries') => {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`receiver: ${what} did not arrive (${received.length} requests received)`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const nth = (counts.get(path) ?? 0) + 1;
      counts.set(path, nth);
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      received.push({ path, headers: req.headers, raw, body, at: Date.now() });
      const answer = receiver.answer(path, nth);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
