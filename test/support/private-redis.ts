import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';

/**
 * A redis-server of the test's own on a free port, for tests that stop, kill or restart Redis (or
 * kill the processes using it): the shared Redis on 6379 is never touched. Every server started
 * here is killed when the test process exits, whatever happens to the hooks.
 */

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface PrivateRedisOptions {
  /** Default: a free port. A restart passes the port of the server it replaces. */
  port?: number;
  /** Where a persistent server keeps its files. */
  dir?: string;
  /**
   * none: nothing survives a restart (default); rdb: a dump file written by SAVE and loaded at start;
   * aof: every write appended and fsynced before it is answered (`--appendfsync always`).
   */
  persistence?: 'none' | 'rdb' | 'aof';
}

export interface PrivateRedis {
  child: ChildProcess;
  port: number;
  url: string;
  /** Whether the server process is still running. */
  running(): boolean;
  /** SIGKILL: what is not persisted is lost. */
  kill(): Promise<void>;
  /** SIGTERM: Redis shuts down as SHUTDOWN does (the append-only file flushed). */
  shutdown(timeoutMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server (pid ${child.pid}) did not exit within ${timeoutMs} ms of ${signal}`));
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

export async function startPrivateRedis(opts: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  const port = opts.port ?? (await freePort());
  const persistence = opts.persistence ?? 'none';
  if (persistence !== 'none' && !opts.dir) throw new Error(`a private Redis with ${persistence} persistence needs a dir`);
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', ''];
  if (persistence === 'rdb') args.push('--appendonly', 'no', '--dir', opts.dir!, '--dbfilename', 'dump.rdb');
  else if (persistence === 'aof') args.push('--appendonly', 'yes', '--appendfsync', 'always', '--dir', opts.dir!);
  else args.push('--appendonly', 'no');
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const url = `redis://127.0.0.1:${port}`;

  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  const deadline = Date.now() + 10_000;
  try {
    for (;;) {
      if (exited(child)) throw new Error(`private redis-server on port ${port} exited at start (${child.exitCode ?? child.signalCode})`);
      try {
        await probe.connect();
        // A server loading its append-only file answers LOADING until it is done.
        await probe.ping();
        break;
      } catch {
        probe.disconnect();
        if (Date.now() > deadline) throw new Error(`private redis-server on port ${port} did not start within 10 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    probe.disconnect();
  }
  return {
    child,
    port,
    url,
    running: () => !exited(child),
    kill: () => stopChild(child, 'SIGKILL', 5000),
    shutdown: (timeoutMs = 10_000) => stopChild(child, 'SIGTERM', timeoutMs),
  };
}
