import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    // The cluster starts in about a second; a broker's failover takes a few.
    hookTimeout: 30_000,
    testTimeout: 60_000,
  },
});
