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

/** Stops accepting connections and closes the idle ones; resolves once the open requests are answered. */
export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
