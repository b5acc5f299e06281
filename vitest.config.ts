import { defineConfig } from 'vitest/config';

// chdb's native engine segfaults at exit inside worker threads, so every test file runs in its
// own forked process (which also gives each file its own engine and data folder).
export default defineConfig({
  test: {
    pool: 'forks',
    // Two files at a time on the 2-core machine (vitest's default is one fewer than the cores): the
    // fault, image and CLI tests spend most of their time waiting on child processes and timers.
    maxWorkers: 2,
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/engine.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
