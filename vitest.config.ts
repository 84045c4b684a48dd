import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Store tests create their own databases; files run in parallel on 2 cores.
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    maxWorkers: 2,
  },
});
