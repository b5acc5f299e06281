import { describe, expect, it } from 'vitest';
import { TimeSlices } from '../src/time-slices.js';

/** Busy-waits: synchronous work of a known length. */
const work = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('TimeSlices', () => {
  it('lets timers and I/O callbacks run between slices of a long synchronous loop', async () => {
    const slices = new TimeSlices(5);
    let timerRanAt: number | undefined;
    setTimeout(() => (timerRanAt = step), 0);
    let step = 0;
    for (; step < 40; step++) {
      work(1);
      if (slices.due) await slices.turn();
    }
    // 40 ms of work in slices of 5 ms: the timer ran after the first slice or so, not at the end.
    expect(timerRanAt).toBeDefined();
    expect(timerRanAt!).toBeLessThan(20);
  });

  it('is not due before its budget is used, and a turn starts a new slice', async () => {
    const slices = new TimeSlices(20);
    expect(slices.due).toBe(false);
    work(25);
    expect(slices.due).toBe(true);
    await slices.turn();
    expect(slices.due).toBe(false);
  });

  it('without turns, the same loop holds the timer back until it ends', async () => {
    let timerRanAt: number | undefined;
    let step = 0;
    setTimeout(() => (timerRanAt = step), 0);
    for (; step < 40; step++) work(1);
    await new Promise((r) => setTimeout(r, 5));
    expect(timerRanAt).toBe(40);
  });
});
