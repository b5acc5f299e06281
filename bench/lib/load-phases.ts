/**
 * bench/load.ts's phases (issue 32): one service, one dataset copy, the load mix under each
 * arriving rate in turn (`--rates 0,100,500`: an idle phase first), so that every figure of a
 * phase is also a ratio to the idle phase of the same run — on a shared 2-core host, absolute
 * figures drift between runs, ratios within one run much less.
 */
import type { Ingestion, QueueSample } from './load-ingest.js';
import { KINDS, type Kind, type MixFigures } from './load-http.js';
import type { BatchCommitted } from './load-procs.js';

export interface PhaseRun {
  rate: number;
  windowStart: number;
  windowEnd: number;
  mix: MixFigures;
  enqueuedInWindow: number;
  cpu: { serviceSeconds: number; redisSeconds: number; benchSeconds: number };
  endSample: QueueSample | undefined;
}

const q = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
};
export const r1 = (x: number) => (Number.isFinite(x) ? +x.toFixed(1) : null);
export const r2 = (x: number) => (Number.isFinite(x) ? +x.toFixed(2) : null);

export const lagFigures = (ms: number[]) => ({
  jobs: ms.length,
  p50S: r2(q(ms, 0.5) / 1000),
  p99S: r2(q(ms, 0.99) / 1000),
  maxS: r2(q(ms, 1) / 1000),
});

/** The batches' size, wall time and engine time, and the engine time per committed report. */
export function batchFigures(batches: BatchCommitted[]) {
  const jobs = batches.reduce((n, b) => n + b.jobs, 0);
  const engine = batches.filter((b) => b.engineMs !== undefined).map((b) => b.engineMs!);
  const engineTotal = engine.reduce((a, b) => a + b, 0);
  return {
    count: batches.length,
    reports: jobs,
    reportsP50: q(
      batches.map((b) => b.jobs),
      0.5,
    ),
    reportsMax: q(
      batches.map((b) => b.jobs),
      1,
    ),
    msP50: q(
      batches.map((b) => b.ms),
      0.5,
    ),
    msP99: q(
      batches.map((b) => b.ms),
      0.99,
    ),
    msMax: q(
      batches.map((b) => b.ms),
      1,
    ),
    engineMsP50: engine.length ? q(engine, 0.5) : null,
    engineMsPerBatch: engine.length ? r1(engineTotal / engine.length) : null,
    engineMsPerReport: engine.length && jobs ? r2(engineTotal / jobs) : null,
  };
}

/** One phase's figures from the run's records. */
export function phaseFigures(p: PhaseRun, ingestion: Ingestion, batches: BatchCommitted[]) {
  const seconds = (p.windowEnd - p.windowStart) / 1000;
  const inWindow = (at: number) => at >= p.windowStart && at <= p.windowEnd;
  const started = ingestion.startedAt();
  const windowBatches = batches.filter((b) => inWindow(b.at));
  const oldest = ingestion.samples.filter((s) => inWindow(started + s.t * 1000)).map((s) => s.oldestPendingS);
  const b = batchFigures(windowBatches);
  const kinds = Object.fromEntries(
    KINDS.map((k) => {
      const f = p.mix.kinds[k];
      return [k, { rps: f.rps, p50: f.p50, p99: f.p99, max: f.max, non2xx: f.non2xx, hitRatio: f.hitRatio }];
    }),
  ) as Record<Kind, { rps: number; p50: number; p99: number; max: number; non2xx: number; hitRatio: number | null }>;
  return {
    rate: p.rate,
    seconds: r1(seconds),
    api: { rps: p.mix.rps, errors: p.mix.errors, non2xx: p.mix.non2xx, kinds },
    ingestion: {
      enqueuedPerSecond: r1(p.enqueuedInWindow / seconds),
      committedPerSecond: r1(b.reports / seconds),
      batches: b,
      // The engine's share taken by batches in the window.
      engineShare: b.engineMsPerBatch !== null ? r2((b.engineMsPerBatch * b.count) / 1000 / seconds) : null,
      lag: lagFigures(ingestion.lags.filter((l) => inWindow(l.at)).map((l) => l.ms)),
      oldestPending: { samples: oldest.length, p99S: r2(q(oldest, 0.99)), maxS: r2(q(oldest, 1)) },
      backlogAtEnd: p.endSample ? p.endSample.waiting + p.endSample.active + p.endSample.delayed : null,
    },
    cpu: p.cpu,
  };
}
export type PhaseFigures = ReturnType<typeof phaseFigures>;

const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? r2(a / b) : null);

/** A phase's figures as ratios to the idle phase's (req/s, each kind's p50 and p99). */
export function ratiosTo(idle: PhaseFigures, p: PhaseFigures) {
  return {
    rps: ratio(p.api.rps, idle.api.rps),
    ...Object.fromEntries(
      KINDS.flatMap((k) => [
        [`${k}P50`, ratio(p.api.kinds[k].p50, idle.api.kinds[k].p50)],
        [`${k}P99`, ratio(p.api.kinds[k].p99, idle.api.kinds[k].p99)],
      ]),
    ),
  };
}

/** The issue's targets of a phase (issue 32: at 100 and at 500 reports/s). */
export function phaseTargets(idle: PhaseFigures | undefined, p: PhaseFigures, bulkEnginePerReport: number | null) {
  const k = p.api.kinds;
  const rpsRatio = idle ? ratio(p.api.rps, idle.api.rps) : null;
  const lagMax = Math.max(p.ingestion.lag.maxS ?? 0, p.ingestion.oldestPending.maxS ?? 0);
  const perReport = p.ingestion.batches.engineMsPerReport;
  if (p.rate === 0) return null;
  if (p.rate <= 100)
    return {
      rpsRatio: { min: 0.6, value: rpsRatio, met: rpsRatio !== null && rpsRatio >= 0.6 },
      metricsP99: { maxMs: 100, value: k.metrics.p99, met: k.metrics.p99 <= 100 },
      metricsHits: { min: 0.8, value: k.metrics.hitRatio, met: (k.metrics.hitRatio ?? 0) >= 0.8 },
      statsFindingsP99: { maxMs: 500, value: [k.stats.p99, k.findings.p99], met: k.stats.p99 <= 500 && k.findings.p99 <= 500 },
      lagP99: { maxS: 5, value: p.ingestion.lag.p99S, met: (p.ingestion.lag.p99S ?? Infinity) <= 5 },
      enginePerReport: {
        maxTimesBulk: 2,
        value: perReport,
        bulk: bulkEnginePerReport,
        met: perReport !== null && bulkEnginePerReport !== null && perReport <= 2 * bulkEnginePerReport,
      },
    };
  return {
    lagMax: { maxS: 30, value: lagMax, met: lagMax < 30 },
    rpsRatio: { min: 0.3, value: rpsRatio, met: rpsRatio !== null && rpsRatio >= 0.3 },
    everyP99: { maxMs: 1000, value: KINDS.map((x) => k[x].p99), met: KINDS.every((x) => k[x].p99 <= 1000) },
  };
}

/** The phases as a markdown table, ratios to the idle phase in parentheses. */
export function printPhases(phases: (PhaseFigures & { ratios: ReturnType<typeof ratiosTo> | null })[]): void {
  const pct = (x: number | null) => (x === null ? '–' : `${(x * 100).toFixed(1)}%`);
  const rt = (x: number | null | undefined) => (x === null || x === undefined ? '' : ` (×${x})`);
  console.log(
    '| reports/s | API req/s | metrics p50 / p99 ms | metrics hits | stats p50 / p99 ms | findings p50 / p99 ms | batches: reports p50, engine ms p50, engine ms/report | engine share | lag p99 / max s |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const p of phases) {
    const k = p.api.kinds;
    const r = (p.ratios ?? {}) as Record<string, number | null>;
    const b = p.ingestion.batches;
    console.log(
      `| ${p.rate} | ${p.api.rps}${rt(r.rps)} | ${k.metrics.p50} / ${k.metrics.p99}${rt(r.metricsP99)} | ${pct(k.metrics.hitRatio)} | ` +
        `${k.stats.p50} / ${k.stats.p99}${rt(r.statsP99)} | ${k.findings.p50} / ${k.findings.p99}${rt(r.findingsP99)} | ` +
        `${b.count ? `${b.count}: ${b.reportsP50}, ${b.engineMsP50}, ${b.engineMsPerReport}` : '–'} | ${p.ingestion.engineShare ?? '–'} | ` +
        `${p.ingestion.lag.p99S ?? '–'} / ${Math.max(p.ingestion.lag.maxS ?? 0, p.ingestion.oldestPending.maxS ?? 0)} |`,
    );
  }
}
