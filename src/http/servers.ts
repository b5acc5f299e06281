import type http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on `port` (0: any free one); resolves to the server's URL. */
export function listen(server: http.Server, port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address() as AddressInfo;
      resolve(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`);
    });
  });
}

/** What a request that arrives on a kept-alive connection of a stopping server gets. */
function refuseWhileStopping(_req: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', Connection: 'close', 'Retry-After': '1' });
  res.end(JSON.stringify({ message: 'Unavailable' }));
}

/**
 * Stops taking requests at once and closes the idle connections; resolves once the requests in
 * flight are answered. `server.close()` alone leaves kept-alive connections bringing new requests
 * (a client under load would never let go): from now on those are refused with 503 and closed.
 */
export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.removeAllListeners('request');
    server.on('request', refuseWhileStopping);
    server.closeIdleConnections();
  });
}
