import { describe, expect, it } from 'vitest';
import { within } from '../src/domain/deadline.js';

const resolveAfter = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('within', () => {
  it('settles with the work when the work finishes first, and never calls the fallback', async () => {
    let called = 0;
    await expect(within(resolveAfter(5, 'done'), 200, () => ++called)).resolves.toBe('done');
    await resolveAfter(250, undefined);
    expect(called).toBe(0);
  });

  it('settles with the fallback when the work is late', async () => {
    const started = Date.now();
    await expect(within(resolveAfter(2000, 'done'), 30, () => 'late')).resolves.toBe('late');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('rejects with what the fallback throws when the work is late', async () => {
    await expect(
      within(resolveAfter(2000, 'done'), 30, () => {
        throw new Error('no answer within 30 ms');
      }),
    ).rejects.toThrow('no answer within 30 ms');
  });

  it("rejects with the work's own failure when it fails first", async () => {
    await expect(within(Promise.reject(new Error('refused')), 200, () => 'late')).rejects.toThrow('refused');
  });
});
