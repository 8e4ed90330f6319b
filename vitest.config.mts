import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['libs/*/test/**/*.spec.ts', 'services/*/test/**/*.spec.ts'],
    globalSetup: ['libs/testing/src/global-setup.ts'],
    env: { TZ: 'UTC' },
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './vitest.summary-reporter.mjs'],
  },
});
