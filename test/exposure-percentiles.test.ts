import { describe, expect, it } from 'vitest';
import { percentilesOfCounts } from '../src/stats/exposure.js';
import { round2 } from '../src/stats/numbers.js';
import { freshStore } from './support/engine.js';

/**
 * Exposure percentiles are interpolated from the counts of each distinct value (src/stats/exposure.ts):
 * they must equal the engine's quantilesExactInclusive and avg over the values themselves (SPEC §7.8).
 */

/** Random whole hours with many repeats, as exposures have. */
function sample(seed: number): number[] {
  let x = seed;
  const next = () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31;
  };
  const n = 1 + Math.floor(next() * 300);
  const spread = 1 + Math.floor(next() * 5000);
  return Array.from({ length: n }, () => Math.floor(next() * next() * spread));
}

function histogram(values: number[]): [number, number][] {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => a - b);
}

describe('percentiles from counts per value', () => {
  it('agree with the engine on small hand-checked sets', () => {
    expect(percentilesOfCounts(histogram([1, 3]))).toEqual({
      percentile_10: 1.2,
      percentile_25: 1.5,
      percentile_50: 2,
      percentile_75: 2.5,
      percentile_90: 2.8,
      mean: 2,
    });
    expect(percentilesOfCounts(histogram([0, 10, 10, 20, 35, 50, 50, 51, 52, 80, 99]))).toMatchObject({
      percentile_10: 10,
      percentile_25: 15,
      percentile_50: 50,
      percentile_75: 51.5,
      percentile_90: 80,
    });
    expect(percentilesOfCounts([])).toEqual({
      percentile_10: 0,
      percentile_25: 0,
      percentile_50: 0,
      percentile_75: 0,
      percentile_90: 0,
      mean: 0,
    });
    expect(percentilesOfCounts([[7, 1]]).percentile_90).toBe(7);
  });

  it('agree with quantilesExactInclusive and avg on 200 random multisets', async () => {
    const store = await freshStore();
    for (let seed = 1; seed <= 200; seed++) {
      const values = sample(seed);
      const [row] = await store.query<{ q: number[]; mean: number }>(
        'SELECT quantilesExactInclusive(0.1, 0.25, 0.5, 0.75, 0.9)(toFloat64(x)) AS q, avg(x) AS mean FROM (SELECT arrayJoin({v:Array(Int64)}) AS x)',
        { v: values },
      );
      const [p10, p25, p50, p75, p90] = row!.q.map(round2);
      expect(percentilesOfCounts(histogram(values)), `seed ${seed}`).toEqual({
        percentile_10: p10,
        percentile_25: p25,
        percentile_50: p50,
        percentile_75: p75,
        percentile_90: p90,
        mean: round2(row!.mean),
      });
    }
  });
});
