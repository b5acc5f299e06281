/**
 * bench/load.ts's HTTP side: one autocannon instance whose connections each cycle through ten
 * requests (7 metrics, 2 statistics, 1 findings page), so that the mix of requests is 70/20/10
 * whatever each kind costs, with latencies, statuses and X-Cache headers recorded per kind; and
 * single requests of pathological sizes sent on a raw socket.
 */
import net from 'node:net';
import autocannon from 'autocannon';
import { prng } from '../../src/demo/prng.js';

export type Kind = 'metrics' | 'stats' | 'findings';
export const KINDS: Kind[] = ['metrics', 'stats', 'findings'];
/** The order of a connection's cycle: 70% metrics, 20% statistics, 10% findings pages. */
const CYCLE: Kind[] = ['metrics', 'metrics', 'stats', 'metrics', 'metrics', 'findings', 'metrics', 'metrics', 'stats', 'metrics'];

export interface MixPaths {
  /** A handful of metrics paths (team and global), repeated: cache hits until a batch commits. */
  metrics: string[];
  /** Draws a statistics path of the database API (varying team and parameters). */
  stats: (rnd: () => number) => string;
  /** Draws a findings page path (varying team and page). */
  findings: (rnd: () => number) => string;
}

export interface KindFigures {
  requests: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  non2xx: number;
  statuses: Record<string, number>;
  xCache: Record<string, number>;
  /** Share of X-Cache: HIT among the answers that carry the header. */
  hitRatio: number | null;
}

export interface MixFigures {
  seconds: number;
  requests: number;
  rps: number;
  /** Connection errors and timeouts (autocannon's `errors` include timeouts). */
  errors: number;
  timeouts: number;
  non2xx: number;
  kinds: Record<Kind, KindFigures>;
  /** Requests per second in each 10 s window (all kinds). */
  windows10s: number[];
}

const round = (x: number, d = 2) => (Number.isFinite(x) ? +x.toFixed(d) : x);

function quantile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

class Recorder {
  private data = new Float64Array(1 << 16);
  length = 0;
  push(x: number) {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = x;
  }
  sorted(): Float64Array {
    return this.data.slice(0, this.length).sort();
  }
}

/** Runs the mix against `url` for `seconds`; `record` false for a warm-up. */
export async function runMix(opts: {
  url: string;
  token: string;
  paths: MixPaths;
  connections: number;
  seconds: number;
  timeoutS: number;
  seed: number;
  overallRate?: number;
}): Promise<MixFigures> {
  const rnd = prng(opts.seed);
  const metricsHeaders = { authorization: `Bearer ${opts.token}` };
  let last: { kind: Kind; cache: string | undefined } | undefined;
  const onResponse = (kind: Kind) => (_status: number, _body: string, _ctx: unknown, headers?: Record<string, string | string[]>) => {
    let cache: string | undefined;
    if (headers) {
      for (const [k, v] of Object.entries(headers)) {
        if (k.toLowerCase() === 'x-cache') cache = String(v);
      }
    }
    last = { kind, cache };
  };
  let metricsIndex = 0;
  const requests = CYCLE.map((kind) => ({
    method: 'GET' as const,
    ...(kind === 'metrics' ? { headers: metricsHeaders } : {}),
    setupRequest: (req: autocannon.Request) => {
      const path =
        kind === 'metrics'
          ? opts.paths.metrics[metricsIndex++ % opts.paths.metrics.length]!
          : kind === 'stats'
            ? opts.paths.stats(rnd)
            : opts.paths.findings(rnd);
      return { ...req, path };
    },
    onResponse: onResponse(kind),
  }));

  const times: Record<Kind, Recorder> = { metrics: new Recorder(), stats: new Recorder(), findings: new Recorder() };
  const statuses: Record<Kind, Record<string, number>> = { metrics: {}, stats: {}, findings: {} };
  const xCache: Record<Kind, Record<string, number>> = { metrics: {}, stats: {}, findings: {} };
  const perSecond: number[] = [];
  const started = performance.now();

  // No connections: ingestion alone for the same time (a baseline).
  const result =
    opts.connections === 0
      ? await new Promise<{ errors: number; timeouts: number }>((r) => setTimeout(() => r({ errors: 0, timeouts: 0 }), opts.seconds * 1000))
      : await new Promise<autocannon.Result>((resolve, reject) => {
          const instance = autocannon(
            {
              url: opts.url,
              connections: opts.connections,
              duration: opts.seconds,
              timeout: opts.timeoutS,
              requests: requests as unknown as autocannon.Request[],
              ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
            },
            (err, res) => (err ? reject(err) : resolve(res)),
          );
          instance.on('response', (_client, status, _bytes, ms) => {
            const kind = last?.kind;
            if (!kind) return;
            times[kind].push(ms);
            statuses[kind][status] = (statuses[kind][status] ?? 0) + 1;
            const c = last!.cache ?? 'none';
            xCache[kind][c] = (xCache[kind][c] ?? 0) + 1;
            const second = Math.floor((performance.now() - started) / 1000);
            perSecond[second] = (perSecond[second] ?? 0) + 1;
            last = undefined;
          });
        });
  const seconds = (performance.now() - started) / 1000;

  const kinds = {} as Record<Kind, KindFigures>;
  let non2xx = 0;
  let total = 0;
  for (const kind of KINDS) {
    const s = times[kind].sorted();
    const bad = Object.entries(statuses[kind]).reduce(
      (n, [status, count]) => n + (Number(status) >= 200 && Number(status) < 300 ? 0 : count),
      0,
    );
    non2xx += bad;
    total += s.length;
    const withHeader = Object.entries(xCache[kind])
      .filter(([k]) => k !== 'none')
      .reduce((n, [, c]) => n + c, 0);
    kinds[kind] = {
      requests: s.length,
      rps: round(s.length / seconds, 1),
      p50: round(quantile(s, 0.5)),
      p90: round(quantile(s, 0.9)),
      p99: round(quantile(s, 0.99)),
      max: round(s[s.length - 1] ?? NaN),
      mean: round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)),
      non2xx: bad,
      statuses: statuses[kind],
      xCache: xCache[kind],
      hitRatio: withHeader > 0 ? round((xCache[kind].HIT ?? 0) / withHeader, 3) : null,
    };
  }
  const windows10s: number[] = [];
  for (let w = 0; (w + 1) * 10 <= perSecond.length; w++) {
    let n = 0;
    for (let i = w * 10; i < (w + 1) * 10; i++) n += perSecond[i] ?? 0;
    windows10s.push(round(n / 10, 1));
  }
  return {
    seconds: round(seconds, 1),
    requests: total,
    rps: round(total / seconds, 1),
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx,
    kinds,
    windows10s,
  };
}

export interface RawAnswer {
  /** HTTP status, or undefined when the connection ended without a status line. */
  status: number | undefined;
  ms: number;
  /** First bytes of the body, or the socket error. */
  note: string;
}

/**
 * Sends one request as bytes on a fresh connection (`Connection: close`) and waits for the whole
 * answer or the connection's end: an oversized head may be refused (431) before it is sent whole.
 */
export function rawRequest(port: number, target: string, headers: Record<string, string> = {}, timeoutMs = 60_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const head = `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}Connection: close\r\n\r\n`;
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let done = false;
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const ms = performance.now() - started;
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const body = text.split('\r\n\r\n').slice(1).join('\r\n\r\n');
      resolve({
        status: m ? Number(m[1]) : undefined,
        ms: round(ms, 2),
        note: m ? body.slice(0, 120) : (error ?? 'connection ended without an answer'),
      });
      socket.destroy();
    };
    const timer = setTimeout(() => {
      error = `no answer within ${timeoutMs} ms`;
      finish();
    }, timeoutMs);
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      // Complete once the Content-Length is in (or at the end of the connection).
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end));
      if (end >= 0 && length && Buffer.byteLength(text, 'latin1') >= end + 4 + Number(length[1])) finish();
    });
    socket.on('error', (err) => {
      error = `${(err as NodeJS.ErrnoException).code ?? err.message}`;
      // A refused head can reset the connection while the rest is still being written; an answer
      // that arrived before counts.
      setTimeout(finish, 20);
    });
    socket.on('close', finish);
  });
}
