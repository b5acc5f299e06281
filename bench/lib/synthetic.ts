/**
 * Synthetic report histories for the benchmarks: `targets` targets, each scanned `scans` times
 * (one day apart) by one check family, every report carrying 10 vulnerabilities. Each of the 10
 * slots of a target keeps its issue from scan to scan but now and then switches to another one
 * (the old finding gets FIXED, a new one opens) or back (a reopen), so a history of N reports holds
 * about N / 2 findings and 10 × N FOUND events. Reports come out in time order.
 */

import { prng } from '../../src/demo/prng.js';

export const VULNS_PER_REPORT = 10;
const ISSUES = 5000;
const BASE = Date.UTC(2024, 0, 1) / 1000;

export interface SyntheticOptions {
  targets: number;
  scans: number;
  /** Chance per slot and scan of switching to another issue. */
  churn?: number;
  teams?: number;
  /** Scans generated but not yielded: a later part of the same history. */
  skipScans?: number;
}

const pad = (n: number) => String(n).padStart(2, '0');
function stamp(epoch: number): string {
  const d = new Date(epoch * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

export const targetName = (i: number) => `host-${i}.bench.example.com`;
/** Team of a target: team 0 (the "large team") holds 20% of the targets, the rest spread evenly. */
export function teamOf(i: number, teams: number): number {
  return i % 5 === 0 ? 0 : 1 + (i % (teams - 1));
}
export const teamName = (t: number) => `00000000-0000-4000-8000-${String(t).padStart(12, '0')}`;

export function* syntheticReports(opts: SyntheticOptions): Generator<Record<string, unknown>> {
  const churn = opts.churn ?? 0.05;
  const rnd = prng(42);
  const slots = Array.from({ length: opts.targets }, (_, i) =>
    Array.from({ length: VULNS_PER_REPORT }, (_, j) => (i * 7 + j * 131) % ISSUES),
  );
  for (let s = 0; s < opts.scans; s++) {
    for (let i = 0; i < opts.targets; i++) {
      const mine = slots[i]!;
      for (let j = 0; j < VULNS_PER_REPORT; j++) {
        const r = rnd();
        if (r < churn) mine[j] = (mine[j]! + 1 + Math.floor(rnd() * 3)) % ISSUES;
      }
      if (s < (opts.skipScans ?? 0)) continue;
      const time = BASE + s * 86_400 + Math.floor((i / opts.targets) * 80_000);
      yield {
        check_id: `bench-${s}-${i}`,
        checktype_name: 'vulcan-bench',
        checktype_version: '1.0.0',
        status: 'FINISHED',
        target: targetName(i),
        options: '{}',
        tag: 'sdrn:bench',
        start_time: stamp(time),
        end_time: stamp(time),
        vulnerabilities: mine.map((issue) => ({
          id: `v-${s}-${i}-${issue}`,
          summary: `Synthetic issue ${issue}`,
          description: `Issue number ${issue} of the benchmark catalogue.`,
          score: (issue % 101) / 10,
          cwe_id: 100 + (issue % 500),
          recommendations: ['Upgrade the affected component.'],
          references: [`https://example.org/issues/${issue}`],
          labels: issue % 3 === 0 ? ['web'] : ['infra'],
          details: `Detected during scan ${s}`,
          resources: [{ Name: 'Ports', Header: ['Port', 'Protocol'], Rows: [{ Port: '443', Protocol: 'tcp' }] }],
        })),
      };
    }
  }
}
