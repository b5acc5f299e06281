import { defineConfig } from 'vitest/config';

// chdb's native engine segfaults at exit inside worker threads, so every test file runs in its
// own forked process (which also gives each file its own engine and data folder).
export default defineConfig({
  test: {
    pool: 'forks',
    // Three files at a time on the 2-core machine: the fault, image, CLI and browser tests spend much
    // of their time waiting on child processes and timers. On the AMD EPYC host the suite took 620 s
    // with three against about 700 s with two (the processes then kept 1.8 of the 2 cores busy).
    maxWorkers: 3,
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/engine.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
