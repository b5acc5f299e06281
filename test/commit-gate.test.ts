import { describe, expect, it } from 'vitest';
import { CommitGate } from '../src/locks/commit-gate.js';

/** The commit gate (src/locks/commit-gate.ts): a snapshot closes it between whole batches. */

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the commit gate', () => {
  it('closes only once the writers inside have finished, and keeps new ones out until it opens', async () => {
    const gate = new CommitGate();
    const events: string[] = [];
    const batch = gate.pass(async () => {
      events.push('batch starts');
      await tick(30);
      // A statement of the batch passes again at once, though the gate is closing.
      await gate.pass(async () => events.push('batch writes'));
      events.push('batch ends');
    });
    await tick();
    const snapshot = gate.close(async () => {
      events.push('snapshot');
      await tick(30);
      await gate.pass(async () => events.push('snapshot writes'));
      events.push('snapshot ends');
    });
    await tick();
    expect(gate.isClosed).toBe(true);
    const late = gate.pass(async () => events.push('late writer'));
    await Promise.all([batch, snapshot, late]);
    expect(events).toEqual(['batch starts', 'batch writes', 'batch ends', 'snapshot', 'snapshot writes', 'snapshot ends', 'late writer']);
    expect(gate.isClosed).toBe(false);
  });

  it('opens again when the snapshot fails, and a timer set inside a pass does not pass a closed gate later', async () => {
    const gate = new CommitGate();
    await expect(gate.close(() => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full');
    expect(gate.isClosed).toBe(false);

    let later: Promise<string> | undefined;
    await gate.pass(async () => {
      setTimeout(() => (later = gate.pass(async () => 'written')), 20);
    });
    let released = false;
    const snapshot = gate.close(async () => {
      await tick(60);
      released = true;
    });
    await tick(40);
    expect(later).toBeDefined();
    expect(await Promise.race([later!, tick(1).then(() => 'waiting')])).toBe('waiting');
    await snapshot;
    expect(released).toBe(true);
    expect(await later!).toBe('written');
  });
});
