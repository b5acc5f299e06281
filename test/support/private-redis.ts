import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';

/**
 * A redis-server of the test's own on a free port, for tests that stop, kill or restart Redis (or
 * kill the processes using it): the shared Redis on 6379 is never touched. Every server started
 * here is killed when the test process exits, whatever happens to the hooks.
 */

/** A port free now: `port` 0 lets the system choose one of its ephemeral ports. */
export function freePort(port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: chosen } = server.address() as net.AddressInfo;
      server.close(() => resolve(chosen));
    });
  });
}

/**
 * A free port for a private Redis, drawn at random below the system's ephemeral ports (32768 and
 * up on Linux): a Redis killed by its test keeps its port for its restart, and a port the system
 * hands out for `listen(0)` (other tests' services) is never one of these.
 */
async function freeRedisPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await freePort(port).catch(() => undefined);
    if (free !== undefined) return free;
  }
}

export interface PrivateRedisOptions {
  /** Default: a free port (below the ephemeral ones). A restart passes the port of the server it replaces. */
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

/** The port was another process's by the time the server started (it may even be another test's Redis). */
class PortTaken extends Error {}

/**
 * Starts a private redis-server. A free port can be taken by another test file (three run at a
 * time) between its choice and the server's bind: the server then exits, while the port may well
 * answer PING, as another test's Redis. So the server that answers must be the one started here
 * (its process id); on a port of its own choosing, up to three ports are tried. A test sharing a
 * Redis with another one would have its jobs taken by the other test's worker.
 */
export async function startPrivateRedis(opts: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(opts.port ?? (await freeRedisPort()), opts);
    } catch (err) {
      if (!(err instanceof PortTaken) || opts.port !== undefined || attempt >= 3) throw err;
    }
  }
}

async function startOn(port: number, opts: PrivateRedisOptions): Promise<PrivateRedis> {
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
      if (exited(child))
        throw new PortTaken(`private redis-server on port ${port} exited at start (${child.exitCode ?? child.signalCode})`);
      let answering: number | undefined;
      try {
        await probe.connect();
        // A server loading its append-only file answers LOADING until it is done.
        await probe.ping();
        answering = Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1]);
      } catch {
        probe.disconnect();
        if (Date.now() > deadline) throw new Error(`private redis-server on port ${port} did not start within 10 s`);
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      if (answering !== child.pid)
        throw new PortTaken(`port ${port} is answered by another Redis (pid ${answering}), not the one started here`);
      break;
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
