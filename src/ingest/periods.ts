import { NEVER, wholeHours } from '../domain/time.js';

/**
 * OPEN periods (SPEC §2.6, §3.5) as pure functions of the stored history, so the state of a
 * finding does not depend on the order reports arrived in. A period is [found, fixed); an open
 * period has fixed = NEVER.
 */

export interface Period {
  found: number;
  fixed: number;
}

export interface FamilySource {
  id: string;
  time: number;
}

export const isOpen = (p: Period) => p.fixed === NEVER;

/**
 * §3.5 steps 2–3 for one detecting family on one target: walk all of the family's sources by
 * time (at equal times, sources that did not report the finding first), opening a period at a
 * source that reported it while closed and closing at one that did not while open.
 */
export function walkFamily(sources: readonly FamilySource[], reported: ReadonlySet<string>): Period[] {
  const ordered = [...sources].sort((a, b) => a.time - b.time || Number(reported.has(a.id)) - Number(reported.has(b.id)));
  let periods: Period[] = [];
  for (const s of ordered) periods = extendFamily(periods, s.time, reported.has(s.id));
  return periods;
}

/** One step of the walk: a source at `time`, later than every source already walked. */
export function extendFamily(periods: readonly Period[], time: number, reported: boolean): Period[] {
  const last = periods[periods.length - 1];
  const open = last !== undefined && isOpen(last);
  if (reported && !open) return [...periods, { found: time, fixed: NEVER }];
  if (!reported && open) return [...periods.slice(0, -1), { found: last.found, fixed: time }];
  return periods as Period[];
}

/**
 * §3.5 step 4: the union of the families' periods. Overlapping or touching periods merge, so a
 * finding is never FIXED for zero seconds.
 */
export function unionPeriods(periods: readonly Period[]): Period[] {
  const sorted = [...periods].sort((a, b) => a.found - b.found || a.fixed - b.fixed);
  const out: Period[] = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last && p.found <= last.fixed) {
      if (p.fixed > last.fixed) last.fixed = p.fixed;
    } else {
      out.push({ ...p });
    }
  }
  return out;
}

export interface PeriodSummary {
  status: 'OPEN' | 'FIXED';
  firstFoundAt: number;
  lastFoundAt: number;
  /** Seconds spent OPEN in closed periods. */
  closedExposure: number;
  /** Sum and number of the closed periods' TTRs (whole hours each, SPEC §2.6). */
  ttrSum: number;
  ttrCount: number;
}

/** Current status and the precomputed figures stored with a finding; periods must be a union. */
export function summarise(periods: readonly Period[]): PeriodSummary {
  let closedExposure = 0;
  let ttrSum = 0;
  let ttrCount = 0;
  for (const p of periods) {
    if (isOpen(p)) continue;
    closedExposure += p.fixed - p.found;
    ttrSum += wholeHours(p.fixed - p.found);
    ttrCount += 1;
  }
  const first = periods[0];
  const last = periods[periods.length - 1];
  return {
    status: last && isOpen(last) ? 'OPEN' : 'FIXED',
    firstFoundAt: first?.found ?? 0,
    lastFoundAt: last?.found ?? 0,
    closedExposure,
    ttrSum,
    ttrCount,
  };
}
