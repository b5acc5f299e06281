import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { closeServer, listen } from '../src/http/servers.js';

/**
 * SPEC §3.7 (issue 31): a stopping server takes no new request at once. `server.close()` alone
 * keeps serving requests that arrive on kept-alive connections, so a client under load would keep
 * a stopping process busy: those are refused (503, the connection closed), while the request in
 * flight when the stop begins is answered.
 */

type Answer = { status: number; connection: string | undefined; body: string };

const get = (url: string, agent: http.Agent) =>
  new Promise<Answer>((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
      })
      .on('error', reject);
  });

describe('closeServer', () => {
  it('answers the request in flight, refuses one arriving on the same kept-alive connection, and resolves promptly', async () => {
    let arrived: () => void = () => undefined;
    const firstArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const server = http.createServer((req, res) => {
      arrived();
      setTimeout(() => res.end(`answered ${req.url}`), 200);
    });
    const url = await listen(server, 0, '127.0.0.1');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const inFlight = get(`${url}/first`, agent);
      await firstArrived;
      const started = Date.now();
      const closed = closeServer(server).then(() => Date.now() - started);
      expect(await inFlight).toMatchObject({ status: 200, body: 'answered /first' });
      const next = await get(`${url}/second`, agent);
      expect(next).toEqual({ status: 503, connection: 'close', body: JSON.stringify({ message: 'Unavailable' }) });
      // Not the 5 s of keepAliveTimeout: the refused request's connection closed with it.
      expect(await closed).toBeLessThan(2000);
      await expect(get(`${url}/third`, agent)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      agent.destroy();
    }
  });
});
