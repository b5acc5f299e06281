/**
 * The service bench/load.ts runs its load against, as `npm start` runs it (one process: both APIs
 * and the ingest worker on the embedded store), started as a child on a copy of a benchmark
 * dataset and stopped by its process id. Its Redis is a private one (test/support/private-redis.ts:
 * its own port, no persistence, so the shared Redis on 6379 is never touched).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import readline from 'node:readline';

/** A TCP port nobody listens on right now (the kernel's choice). */
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

function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`, to this child alone. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  if (!(await exited(child, graceMs))) {
    child.kill('SIGKILL');
    await exited(child, 5000);
  }
}

/** Copies a dataset's folder (the store must not be open anywhere). */
/**
 * If the benchmark ends early (an error, Ctrl-C), the children it started are killed and its copy
 * of the dataset removed: `pids` is read at exit, so children started later are included.
 */
export function cleanUpAtExit(pids: () => (number | undefined)[], copyDir: string | undefined): void {
  process.on('exit', () => {
    for (const pid of pids()) {
      try {
        if (pid) process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    if (copyDir) fs.rmSync(copyDir, { recursive: true, force: true });
  });
  process.on('SIGINT', () => process.exit(130));
}

export function copyDataset(from: string, to: string): void {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

export interface BatchCommitted {
  /** Epoch ms of the log line (written right after the batch's inserts returned). */
  at: number;
  jobs: number;
  duplicates: number;
  ms: number;
  /** What the batch's statements held the engine (absent in logs of services before issue 32). */
  engineMs?: number;
}

export interface ServiceChild {
  pid: number;
  url: string;
  /** Batches the worker committed, from its log (LOG_LEVEL=info). */
  batches: BatchCommitted[];
  /** Warnings and errors it logged (failed jobs, failed requests), by kind: how many. */
  problems: Map<string, number>;
  /** CPU seconds of the process (all its threads: the engine's included), from /proc. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

const TICKS = 100; // USER_HZ on Linux

function procCpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime
  } catch {
    return NaN;
  }
}

/**
 * Starts `node --max-semi-space-size=64 --import tsx src/cli/main.ts serve` (what `npm start` runs)
 * with both APIs on one port, and resolves once it listens. `env` adds to this process's
 * environment (DATA_DIR, REDIS_URL, JWT_SECRET, …).
 */
export async function startService(
  env: Record<string, string>,
  port: number,
  startTimeoutMs = 15 * 60_000,
  /** The checkout whose service runs (default: this one), e.g. an earlier commit's for a before/after run. */
  cwd?: string,
): Promise<ServiceChild> {
  const child = spawn(process.execPath, ['--max-semi-space-size=64', '--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    ...(cwd ? { cwd } : {}),
    env: { ...process.env, ...env, HOST: '127.0.0.1', DB_API_PORT: String(port), METRICS_API_PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let stopping = false;
  const batches: BatchCommitted[] = [];
  const problems = new Map<string, number>();
  let listening: (() => void) | undefined;
  const ready = new Promise<void>((resolve) => (listening = resolve));
  readline.createInterface({ input: child.stderr! }).on('line', (line) => {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      process.stderr.write(`[service] ${line}\n`);
      return;
    }
    if (rec.msg === 'batch committed') {
      const at = typeof rec.time === 'number' ? rec.time : Date.parse(String(rec.time));
      batches.push({
        at: Number.isFinite(at) ? at : Date.now(),
        jobs: Number(rec.jobs),
        duplicates: Number(rec.duplicates ?? 0),
        ms: Number(rec.ms),
        ...(rec.engineMs !== undefined ? { engineMs: Number(rec.engineMs) } : {}),
      });
    } else if (rec.msg === 'APIs listening') {
      listening?.();
    } else if (rec.level === 'warn' || rec.level === 'error' || (typeof rec.level === 'number' && rec.level >= 40)) {
      // Counted by message and error text without numbers (job ids), printed the first time.
      const err = (rec.err as { message?: string } | undefined)?.message ?? '';
      const kind = `${String(rec.level)}: ${String(rec.msg)}${err ? `: ${err.replace(/\d+/g, 'N')}` : ''}`;
      const seen = problems.get(kind) ?? 0;
      problems.set(kind, seen + 1);
      if (seen === 0) process.stderr.write(`[service] ${line.slice(0, 600)}\n`);
    } else if (rec.msg === 'migration applied' || String(rec.msg).startsWith('migrat')) {
      process.stderr.write(`[service] ${line}\n`);
    }
  });
  const started = performance.now();
  const outcome = await Promise.race([
    ready.then(() => 'ready' as const),
    exited(child, startTimeoutMs).then((gone) => (gone ? ('exited' as const) : ('timeout' as const))),
  ]);
  if (outcome !== 'ready') {
    await stopChild(child, 5000);
    throw new Error(`the service ${outcome === 'exited' ? `exited with ${child.exitCode}` : 'did not listen in time'}`);
  }
  console.log(`service started in ${((performance.now() - started) / 1000).toFixed(1)} s (pid ${child.pid})`);
  // A service that dies under load ends the run: its figures would mean nothing.
  child.once('exit', (code, signal) => {
    if (!stopping) {
      console.error(`the service exited during the run (code ${code}, signal ${signal})`);
      process.exit(1);
    }
  });
  return {
    pid: child.pid!,
    url: `http://127.0.0.1:${port}`,
    batches,
    problems,
    cpuSeconds: () => procCpuSeconds(child.pid!),
    // Graceful shutdown lets the worker finish its batch (README: Shutdown).
    stop: () => {
      stopping = true;
      return stopChild(child, 60_000);
    },
  };
}

export { procCpuSeconds };
